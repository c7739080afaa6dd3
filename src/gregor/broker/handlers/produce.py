"""Produce (key 0), v0–v13.

v0–v2 carry legacy message sets (magic 0/1), which are up-converted to v2 batches before they
are stored; v3+ must carry v2 batches (INVALID_RECORD otherwise). The handler reads only the
magic byte, to tell the two apart: the partition's log parses and validates the batches, once,
and its errors are the partition's answer: CORRUPT_MESSAGE (CRC, framing), INVALID_RECORD
(counts, a control batch), INVALID_TXN_STATE (a non-transactional batch from a producer whose
transaction is open), MESSAGE_TOO_LARGE, INVALID_TIMESTAMP and the producer-sequence errors among
them. A transactional batch opens (or continues) its producer's transaction on the partition;
a write that would open one is first verified with the transaction coordinator (KIP-890 part 1,
`txn_verification`): the request then waits for the answer (later requests of the connection
queue behind it, as they do behind any request that waits), and a partition that is not in the
transaction gets INVALID_TXN_STATE. v12 is v11 on the wire; once the cluster's
`transaction.version` is 2 (KIP-890 part 2) a v12 transactional write that would open a transaction
on a partition adds the partition to the producer's transaction (the coordinator writes it) instead
of only verifying it, so a v2 producer sends no AddPartitionsToTxn; below level 2 v12 is v11.
v13 (Kafka 4.1, KIP-516) names each topic by its id, in the request and the answer: the ids are
resolved to names first, and a topic id the broker does not know is answered UNKNOWN_TOPIC_ID for
each of its partitions, before authorization, as Kafka's KafkaApis does.

acks=0 gets no response; acks=1 is answered after the leader's append; acks=-1 once the high
watermark has passed the batch, i.e. every ISR member has it (a delayed produce, answered
REQUEST_TIMED_OUT after the request's timeout, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
shrank below min.insync.replicas meanwhile). With one replica the high watermark moves with the
append, so the answer is immediate. A delayed produce is `Pipelined`: its records are appended,
so the connection's next requests are dispatched while it waits (answers still in order). Its
append itself waits for the end of the connection's step (`GatheredAppends`), so that the acks=all
requests a busy leader reads together are appended together; the dispatcher appends them before
any request of another API, and `_append` before an append it answers at once.

Authorization (Kafka's KafkaApis): a transactional producer needs WRITE on its transactional id
(else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), and each topic WRITE (else
TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not). The record bytes count against the
client's `producer_byte_rate`: a client over it is answered with `throttle_time_ms` and its
connection muted for that long, acks=0 included (no answer, the mute alone).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Callable

from gregor.broker.client_quotas import throttled
from gregor.broker.errors import error_code_of
from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.network import LaterAnswer, Pipelined
from gregor.broker.txn_verification import adds_partitions, needing_verification, verify
from gregor.controller.topic_names import ADMIN_CLIENT_ID, INTERNAL_TOPICS
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ProduceRequest, ProduceResponse
from gregor.records.convert import detect_magic, upconvert_to_v2
from gregor.storage.log import AppendInfo

API_KEY = 0
MIN_VERSION, MAX_VERSION = 0, 13
TOPIC_ID_VERSION = 13

_PartitionResponse = ProduceResponse.PartitionProduceResponse
_TopicResponse = ProduceResponse.TopicProduceResponse


def handle(context: BrokerContext, request: ProduceRequest):
    if context.version >= TOPIC_ID_VERSION:
        for topic_data in request.topic_data:
            topic_data.name = context.metadata.topic_name(topic_data.topic_id) or ""
    if request.acks in (0, 1, -1):
        adding = adds_partitions(context, request)
        unverified = needing_verification(context, request, adding)
        if unverified is not None:
            return _verified_then_appended(context, request, *unverified, adding)
    return _appended_all(context, request, {}, gather=True)


async def _verified_then_appended(context: BrokerContext, request: ProduceRequest, producer_id: int,
                                  producer_epoch: int, partitions: list[tuple[str, int]], adding: bool):
    assert request.transactional_id is not None
    errors = await verify(context, request.transactional_id, producer_id, producer_epoch, partitions, adding)
    refused: dict[tuple[str, int], ErrorCode] = {p: error for p, error in errors.items() if error != ErrorCode.NONE}
    answer = _appended_all(context, request, refused)
    return await answer.awaitable if isinstance(answer, Pipelined) else answer


def _appended_all(context: BrokerContext, request: ProduceRequest, refused: dict[tuple[str, int], ErrorCode],
                  gather: bool = False):
    """Append every partition's records but those `refused` (which get their error); acks=all
    appends are left to the end of the step (`GatheredAppends`) when `gather` (the handler is
    running in its step, not after an await)."""
    acks = request.acks
    topics = []
    waiting: list[tuple[_PartitionResponse, _Replication]] = []
    writable, refusal = _writable_topics(context, request)
    nbytes = 0
    for topic_data in request.topic_data:
        partitions = []
        for partition_data in topic_data.partition_data:
            nbytes += len(partition_data.records or b"")
            if not topic_data.name and context.version >= TOPIC_ID_VERSION:
                partitions.append(_failed(partition_data.index, ErrorCode.UNKNOWN_TOPIC_ID))
                continue
            if topic_data.name not in writable:
                partitions.append(_failed(partition_data.index, refusal))
                continue
            if acks not in (0, 1, -1):
                code = ErrorCode.INVALID_REQUIRED_ACKS
                partitions.append(_PartitionResponse(index=partition_data.index, error_code=code,
                                                     base_offset=-1))
                continue
            error = refused.get((topic_data.name, partition_data.index))
            if error is not None:
                message = "Partition was not added to the transaction" if error == ErrorCode.INVALID_TXN_STATE else None
                partitions.append(_failed(partition_data.index, error, message))
                continue
            partitions.append(_append(context, topic_data.name, partition_data, acks, request.timeout_ms, waiting,
                                      gather))
        topics.append(_TopicResponse(name=topic_data.name, topic_id=topic_data.topic_id,
                                     partition_responses=partitions))
    throttle_ms = context.quotas.record_produce(context.connection.principal, context.header.client_id, nbytes,
                                                context.now_ms) if context.quotas.enabled else 0
    if acks == 0:
        return throttled(None, throttle_ms)
    response = ProduceResponse(responses=topics, throttle_time_ms=throttle_ms)
    if waiting:
        return throttled(Pipelined(_when_replicated(response, waiting)), throttle_ms)
    return throttled(response, throttle_ms)


def _writable_topics(context: BrokerContext, request: ProduceRequest) -> tuple[set[str], ErrorCode]:
    """The topics this producer may write to, and the error for the others."""
    transactional_id = request.transactional_id if context.version >= 3 else None
    if transactional_id is not None and not context.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                            transactional_id):
        return set(), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return (context.allowed_names(AclOperation.WRITE, ResourceType.TOPIC, {t.name for t in request.topic_data}),
            ErrorCode.TOPIC_AUTHORIZATION_FAILED)


class _Replication:
    """The token of one partition's acks=all wait (`Partition.await_replication`): the replica
    manager calls it with the outcome when the high watermark passes the records or the wait
    fails, and it hands the outcome on at once (a future would take a turn of the loop per produce)."""

    __slots__ = ("error", "_then")

    def __init__(self) -> None:
        self.error: ErrorCode | None = None
        self._then: Callable[[ErrorCode], None] | None = None

    def __call__(self, error: ErrorCode) -> None:
        if self.error is not None:
            return
        self.error = error
        if self._then is not None:
            self._then(error)

    def then(self, callback: Callable[[ErrorCode], None]) -> None:
        """Hand the outcome to `callback`: when it comes, or now if it came already."""
        self._then = callback
        if self.error is not None:
            callback(self.error)


def _when_replicated(response: ProduceResponse, waiting: list[tuple[_PartitionResponse, _Replication]]) -> LaterAnswer:
    """The acks=all answer: a future done once every delayed partition is replicated or has
    failed. Callbacks, not a coroutine: no task per acks=all produce (a leader's busiest path)."""
    answered = LaterAnswer(loop=asyncio.get_running_loop())
    left = [len(waiting)]

    def replicated(answer: _PartitionResponse, code: ErrorCode) -> None:
        if answered.done():
            return
        if code != ErrorCode.NONE:
            answer.error_code, answer.base_offset, answer.log_append_time_ms, answer.log_start_offset = code, -1, -1, -1
        left[0] -= 1
        if not left[0]:
            answered.set_result(response)

    for answer, replication in waiting:
        replication.then(functools.partial(replicated, answer))
    return answered


def _append(context: BrokerContext, topic: str, partition_data, acks: int, timeout_ms: int,
            waiting: list[tuple[_PartitionResponse, _Replication]], gather: bool) -> _PartitionResponse:
    partitions = context.partitions
    index = partition_data.index
    # Kafka's ReplicaManager lets no producer but its own admin utilities append to an internal
    # topic; the group coordinator writes its records without going through Produce.
    if topic in INTERNAL_TOPICS and context.header.client_id != ADMIN_CLIENT_ID:
        return _failed(index, ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
    partition = partitions.partition(topic, index)
    if partition is None:
        return _failed(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    records = partition_data.records
    if records is None or len(records) == 0:
        return _failed(index, ErrorCode.CORRUPT_MESSAGE, "empty records")
    try:
        if detect_magic(records) < 2:
            if context.version >= 3:
                return _failed(index, ErrorCode.INVALID_RECORD,
                               "produce v3+ requires record batches of magic 2")
            records = memoryview(upconvert_to_v2(records, partitions.max_uncompressed_bytes))
        gathered = context.appends
        if gathered is not None:
            if acks == -1 and gather:
                answer = _appended(index, _NOT_YET_APPENDED)
                replication = _Replication()
                quotas = context.quotas
                charge = functools.partial(quotas.record_request_time, context.connection.principal,
                                           context.header.client_id) if quotas.enabled else None
                gathered.add(partition, records, context.now_ms, timeout_ms, replication,
                             functools.partial(_gathered_outcome, context, topic, len(records), answer, replication),
                             charge)
                waiting.append((answer, replication))
                return answer
            gathered.flush()  # the appends gathered before this one come first
        info = partition.append_as_leader(records, context.now_ms, acks, from_client=True)
    except Exception as error:  # noqa: BLE001 - every failure becomes a partition error code
        code, message = error_code_of(error)
        return _failed(index, code, message)
    context.metrics.produced(topic, len(records), info.record_count)
    if acks != -1:
        partitions.on_leader_append(partition)
        return _appended(index, info)
    replication = _Replication()
    partitions.on_leader_append(partition, partition.await_replication(info, replication, context.now_ms, timeout_ms))
    if replication.error is None:
        answer = _appended(index, info)
        waiting.append((answer, replication))
        return answer
    return _appended(index, info) if replication.error == ErrorCode.NONE else _failed(index, replication.error)


def _gathered_outcome(context: BrokerContext, topic: str, size: int, answer: _PartitionResponse,
                      replication: _Replication, outcome: AppendInfo | Exception) -> None:
    """A gathered append was made (its offsets go into the answer) or failed (the answer gets
    the error, as an append made at once would have)."""
    if isinstance(outcome, AppendInfo):
        context.metrics.produced(topic, size, outcome.record_count)
        answer.base_offset = outcome.first_offset
        answer.log_append_time_ms = outcome.log_append_time
        answer.log_start_offset = outcome.log_start_offset
        return
    code, message = error_code_of(outcome)
    answer.error_message = message
    replication(code)


_NOT_YET_APPENDED = AppendInfo(-1, -1, -1, -1, 0)


def _appended(index: int, info: AppendInfo) -> _PartitionResponse:
    return _PartitionResponse(index=index, error_code=ErrorCode.NONE, base_offset=info.first_offset,
                              log_append_time_ms=info.log_append_time, log_start_offset=info.log_start_offset)


def _failed(index: int, code: ErrorCode, message: str | None = None) -> _PartitionResponse:
    return _PartitionResponse(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                              log_start_offset=-1, error_message=message)


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle, gathers=True)]
