"""TxnOffsetCommit (key 28), v0–v5: a transactional producer commits a group's offsets.

The offsets are written to the group's `__consumer_offsets` partition in the producer's
transactional batch (so that the partition's producer state fences a zombie producer's write)
and stay invisible until the transaction's COMMIT marker reaches that partition; an ABORT drops
them (`GroupCoordinator.commit_transactional_offsets` / `complete_transaction`). v3+ carry the
consumer's member id and generation (KIP-447), checked when given. Partitions of topics this
cluster does not have get UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers. v5 is v4 on the wire; once
the cluster's `transaction.version` is 2 (KIP-890 part 2) a v5 commit first adds the group's
offsets partition to the transaction (AddOffsetsToTxn's work, asked of the transaction
coordinator), so a v2 producer sends no AddOffsetsToTxn; a refusal there is every partition's
error (a busy or unreachable coordinator as the retriable COORDINATOR_LOAD_IN_PROGRESS).
"""

from __future__ import annotations

from typing import Awaitable, Callable

from gregor.broker.group_runtime import OFFSETS_TOPIC
from gregor.broker.handlers import BrokerContext, Handler
from gregor.coordinator.results import OffsetCommitResult
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse

API_KEY = 28
_Topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
_Partition = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition
_RETRIABLE = {code: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS for code in (
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
    ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT)}


def handle(context: BrokerContext, request: TxnOffsetCommitRequest):
    version = context.version
    order: list[tuple[str, int]] = []
    failed: dict[tuple[str, int], ErrorCode] = {}
    offsets = {}
    if not context.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        refusal: ErrorCode | None = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        refusal = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        refusal = None
    readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC, {t.name for t in request.topics})
    for topic in request.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            order.append(key)
            if refusal is not None:
                failed[key] = refusal
            elif topic.name not in readable:
                failed[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif context.metadata.image.partition(*key) is None:
                failed[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[key] = (partition.committed_offset,
                                partition.committed_leader_epoch if version >= 2 else -1,
                                partition.committed_metadata)

    def respond(result: OffsetCommitResult) -> TxnOffsetCommitResponse:
        errors = {**failed, **result.errors}
        topics: dict[str, list[_Partition]] = {}
        for name, index in order:
            topics.setdefault(name, []).append(_Partition(partition_index=index, error_code=errors[(name, index)]))
        return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
            _Topic(name=name, partitions=partitions) for name, partitions in topics.items()])

    if not offsets:
        return respond(OffsetCommitResult({}))
    if version >= 5 and context.transactions.transaction_version >= 2:
        return _added_then_committed(context, request, offsets, respond)
    return _committed(context, request, offsets, respond)


async def _added_then_committed(context: BrokerContext, request: TxnOffsetCommitRequest, offsets: dict,
                                respond: Callable[[OffsetCommitResult], TxnOffsetCommitResponse]
                                ) -> TxnOffsetCommitResponse:
    partition = (OFFSETS_TOPIC, context.groups.coordinator.partition_for(request.group_id))
    errors = await context.transactions.verify(request.transactional_id, request.producer_id,
                                               request.producer_epoch, [partition], add=True)
    error = _RETRIABLE.get(errors[partition], errors[partition])
    if error != ErrorCode.NONE:
        return respond(OffsetCommitResult({key: error for key in offsets}))
    answer = _committed(context, request, offsets, respond)
    return answer if isinstance(answer, TxnOffsetCommitResponse) else await answer


def _committed(context: BrokerContext, request: TxnOffsetCommitRequest, offsets: dict,
               respond: Callable[[OffsetCommitResult], TxnOffsetCommitResponse]
               ) -> TxnOffsetCommitResponse | Awaitable[TxnOffsetCommitResponse]:
    version = context.version

    def call(token: object) -> list:
        return context.groups.coordinator.commit_transactional_offsets(
            token, group_id=request.group_id, producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            generation_id=request.generation_id if version >= 3 else -1,
            member_id=request.member_id if version >= 3 else "",
            group_instance_id=request.group_instance_id if version >= 3 else None,
            offsets=offsets, now_ms=context.now_ms)

    return context.groups.park(call, OffsetCommitResult, respond)


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
