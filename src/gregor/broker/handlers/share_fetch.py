"""ShareFetch (key 78), v1: a share group member's fetch, with acknowledgements piggybacked.

The request works in the member's share session on this broker (`coordinator.share.share_session`:
epoch 0 opens it with the partitions named, later epochs add and forget partitions, -1 closes it
and returns the member's records here to the group). READ on the group is needed
(GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions,
which stay out of the session). Acknowledgements are applied first, per partition and
all-or-nothing (INVALID_RECORD_STATE in AcknowledgeErrorCode for a record the member does not
hold); then records are acquired from the session's partitions, at most MaxRecords in all,
starting each time from the partition after the one that started last. Each partition answers with
the record batches that hold its acquired records and the acquired ranges with their delivery
counts; a batch may also hold records acquired by others, which the client skips. A partition
whose state the group's coordinator changed meanwhile (its write fenced: FENCED_STATE_EPOCH)
answers that error and no records. With nothing acquired and nothing acknowledged the fetch parks
in the consumer fetch purgatory up to MaxWaitMs, until its partitions can give records (the high
watermark moved, records were released or timed out). Epoch 0 with acknowledgements, and -1 with
forgotten partitions, are INVALID_REQUEST, as in Kafka. v0 (Kafka 4.0's early access) is not
offered.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Awaitable

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.errors import error_code_of
from gregor.broker.handlers.share_acknowledgements import (
    NamedPartition, acknowledge, after_persisting, group_refused, load, named_partitions, to_load,
)
from gregor.coordinator.share.share_session import CLOSE_EPOCH, OPEN_EPOCH, ShareSession
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ShareFetchRequest, ShareFetchResponse

API_KEY = 78
_Topic = ShareFetchResponse.ShareFetchableTopicResponse
_Partition = ShareFetchResponse.PartitionData
_Acquired = ShareFetchResponse.AcquiredRecords
_Leader = ShareFetchResponse.LeaderIdAndEpoch


def _top_error(code: ErrorCode, message: str | None = None) -> ShareFetchResponse:
    return ShareFetchResponse(throttle_time_ms=0, error_code=code, error_message=message,
                              acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])


class _Answer:
    """One request being served and the response being built: one PartitionData per partition
    it reports on."""

    def __init__(self, context: BrokerContext, request: ShareFetchRequest, session: ShareSession) -> None:
        self.context = context
        self.request = request
        self.session = session
        self.partitions: dict[tuple[uuid.UUID, int], _Partition] = {}
        self.load_errors: dict[tuple[str, int], ErrorCode] = {}
        self.acknowledged = False
        self.acquired_from: dict[tuple[uuid.UUID, int], tuple[str, int, object]] = {}  # topic, index, share

    def partition(self, topic_id: uuid.UUID, index: int) -> _Partition:
        key = (topic_id, index)
        found = self.partitions.get(key)
        if found is None:
            found = self.partitions[key] = _Partition(partition_index=index, records=b"", acquired_records=[],
                                                      current_leader=_Leader(leader_id=-1, leader_epoch=-1))
        return found

    def serve(self, named: list[NamedPartition]) -> ShareFetchResponse | Awaitable[ShareFetchResponse]:
        """Acknowledge, then acquire; park when there is nothing to answer with yet."""
        context, request, session = self.context, self.request, self.session
        shares = context.shares
        group_id, member_id = session.group_id, session.member_id
        for n in named:
            error = n.error or self.load_errors.get((n.topic or "", n.index), ErrorCode.NONE)
            if error:
                self.partition(n.topic_id, n.index).error_code = error
            if n.acknowledgements:
                self.partition(n.topic_id, n.index).acknowledge_error_code = (
                    self.load_errors.get((n.topic or "", n.index)) or acknowledge(context, group_id, member_id, n))
                self.acknowledged = True
        if request.share_session_epoch == CLOSE_EPOCH:
            shares.release_member(group_id, member_id)
            return after_persisting(context, self.response)
        _acquire(context, request, session, self)
        acquired = any(p.acquired_records for p in self.partitions.values())
        if acquired or self.acknowledged or request.max_wait_ms <= 0 or request.max_records <= 0 \
                or not session.partitions:
            return after_persisting(context, self.response)
        keys = list(session.partitions)
        purgatory = context.partitions.consumer_fetches
        due = purgatory.park(keys, purgatory.now_ms() + request.max_wait_ms,
                             lambda: any(shares.can_acquire(group_id, topic, index) for topic, index in keys))
        return self._when_due(due)

    async def _when_due(self, due: asyncio.Future[None]) -> ShareFetchResponse:
        """The answer once the parked fetch is due: acquired again then (it parked in the same
        step as the acquisition that found nothing, so no release falls in between)."""
        await due
        shares = self.context.shares
        if shares.sessions.get(self.session.group_id, self.session.member_id) is self.session:
            _acquire(self.context, self.request, self.session, self)
        answered = after_persisting(self.context, self.response)
        return answered if isinstance(answered, ShareFetchResponse) else await answered

    def response(self) -> ShareFetchResponse:
        shares, group_id = self.context.shares, self.session.group_id
        for key, (topic, index, share) in self.acquired_from.items():
            if not shares.holds(group_id, topic, index, share):  # its state was changed meanwhile: fenced
                data = self.partitions[key]
                data.records, data.acquired_records, data.error_code = b"", [], ErrorCode.FENCED_STATE_EPOCH
        by_topic: dict[uuid.UUID, list[_Partition]] = {}
        for (topic_id, _), data in self.partitions.items():
            by_topic.setdefault(topic_id, []).append(data)
        return ShareFetchResponse(
            throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
            acquisition_lock_timeout_ms=shares.lock_duration_ms(group_id),
            responses=[_Topic(topic_id=topic_id, partitions=parts) for topic_id, parts in by_topic.items()],
            node_endpoints=[])


def handle(context: BrokerContext, request: ShareFetchRequest):
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if not group_id or not member_id:
        return _top_error(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.")
    if group_refused(context, group_id):
        return _top_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    named = named_partitions(context, request.topics)
    if epoch == OPEN_EPOCH and any(n.acknowledgements for n in named):
        return _top_error(ErrorCode.INVALID_REQUEST, "Acknowledgements cannot open a share session.")
    if epoch == CLOSE_EPOCH and request.forgotten_topics_data:
        return _top_error(ErrorCode.INVALID_REQUEST, "A share session being closed forgets nothing.")
    forgotten: list[tuple[str, int]] = []
    for topic in request.forgotten_topics_data:
        name = context.metadata.topic_name(topic.topic_id)
        if name is not None:
            forgotten.extend((name, index) for index in topic.partitions)
    added = [(n.topic, n.index) for n in named if n.topic is not None and not n.refused]
    error, session = context.shares.sessions.update(group_id, member_id, epoch, added, forgotten,
                                                    context.connection.connection_id)
    if error or session is None:
        return _top_error(error)
    session.topic_ids.update((n.topic, n.topic_id) for n in named if n.topic is not None and not n.refused)
    answer = _Answer(context, request, session)
    missing = to_load(context, group_id, dict.fromkeys([*added, *session.partitions]))
    if missing:
        return _after_loading(answer, named, missing)
    return answer.serve(named)


async def _after_loading(answer: _Answer, named: list[NamedPartition],
                         missing: list[tuple[str, int]]) -> ShareFetchResponse:
    answer.load_errors = await load(answer.context, answer.session.group_id, missing)
    served = answer.serve(named)
    return served if isinstance(served, ShareFetchResponse) else await served


def _acquire(context: BrokerContext, request: ShareFetchRequest, session: ShareSession, answer: _Answer) -> None:
    """Acquire from the session's partitions in turn (each request starts one further along),
    at most MaxRecords and MaxBytes in all."""
    shares = context.shares
    remaining_records = request.max_records
    remaining_bytes = request.max_bytes
    order = list(session.partitions)
    if order:
        turn = session.next_epoch % len(order)
        order = order[turn:] + order[:turn]
    for topic, index in order:
        if remaining_records <= 0 or remaining_bytes <= 0:
            break
        topic_id = shares.topic_id(topic)
        if topic_id is None or session.topic_ids.get(topic, topic_id) != topic_id:
            continue  # gone, or created again: the member still names the deleted topic's id
        error, partition = shares.leader(topic, index)
        if partition is None:
            answer.partition(topic_id, index).error_code = error
            continue
        if (topic, index) in answer.load_errors:
            answer.partition(topic_id, index).error_code = answer.load_errors[(topic, index)]
            continue
        try:
            got = shares.acquire(session.group_id, session.member_id, topic, partition, remaining_records,
                                 remaining_bytes)
        except Exception as failure:  # noqa: BLE001 - a failed read is this partition's error
            answer.partition(topic_id, index).error_code, _ = error_code_of(failure)
            continue
        if not got.ranges:
            continue
        data = answer.partition(topic_id, index)
        answer.acquired_from[(topic_id, index)] = (topic, index, shares.loaded(session.group_id, topic, partition))
        data.records = got.records
        data.acquired_records = [_Acquired(first_offset=r.first_offset, last_offset=r.last_offset,
                                           delivery_count=r.delivery_count) for r in got.ranges]
        data.current_leader = _Leader(leader_id=context.metadata.node_id, leader_epoch=partition.leader_epoch)
        remaining_records -= sum(r.last_offset - r.first_offset + 1 for r in got.ranges)
        remaining_bytes -= len(got.records)


HANDLERS = [Handler(API_KEY, 1, 1, handle)]
