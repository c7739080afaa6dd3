"""ShareAcknowledge (key 79), v1: acknowledgements without a fetch, in the member's share session.

The session must exist (epoch 0 is INVALID_SHARE_SESSION_EPOCH: only ShareFetch opens one);
each partition's batches are applied all-or-nothing (INVALID_RECORD_STATE for a record the
member does not hold); READ on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
(TOPIC_AUTHORIZATION_FAILED) are needed; epoch -1 closes the session afterwards and returns the member's other
records here to the group. The answer leaves once the changed state is persisted. v0 (Kafka
4.0's early access) is not offered.
"""

from __future__ import annotations

import uuid

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.share_acknowledgements import (
    NamedPartition, acknowledge, after_persisting, group_refused, load, named_partitions, to_load,
)
from gregor.coordinator.share.share_session import CLOSE_EPOCH, OPEN_EPOCH
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ShareAcknowledgeRequest, ShareAcknowledgeResponse

API_KEY = 79
_Topic = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
_Partition = ShareAcknowledgeResponse.PartitionData
_Leader = ShareAcknowledgeResponse.LeaderIdAndEpoch


def _top_error(code: ErrorCode, message: str | None = None) -> ShareAcknowledgeResponse:
    return ShareAcknowledgeResponse(throttle_time_ms=0, error_code=code, error_message=message, responses=[],
                                    node_endpoints=[])


def handle(context: BrokerContext, request: ShareAcknowledgeRequest):
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if not group_id or not member_id:
        return _top_error(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.")
    if group_refused(context, group_id):
        return _top_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if epoch == OPEN_EPOCH:
        return _top_error(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session.")
    error, _ = context.shares.sessions.update(group_id, member_id, epoch, [], [],
                                               context.connection.connection_id)
    if error:
        return _top_error(error)
    named = named_partitions(context, request.topics)
    missing = to_load(context, group_id, [(n.topic, n.index) for n in named if n.topic is not None and not n.error])
    if missing:
        return _after_loading(context, request, named, missing)
    return _apply(context, request, named, {})


async def _after_loading(context: BrokerContext, request: ShareAcknowledgeRequest, named: list[NamedPartition],
                         missing: list[tuple[str, int]]) -> ShareAcknowledgeResponse:
    errors = await load(context, request.group_id or "", missing)
    answer = _apply(context, request, named, errors)
    return answer if isinstance(answer, ShareAcknowledgeResponse) else await answer


def _apply(context: BrokerContext, request: ShareAcknowledgeRequest, named: list[NamedPartition],
           load_errors: dict[tuple[str, int], ErrorCode]):
    group_id, member_id = request.group_id or "", request.member_id or ""
    by_topic: dict[uuid.UUID, list[_Partition]] = {}
    for n in named:
        code = load_errors.get((n.topic or "", n.index)) or acknowledge(context, group_id, member_id, n)
        by_topic.setdefault(n.topic_id, []).append(_Partition(
            partition_index=n.index, error_code=code, current_leader=_Leader(leader_id=-1, leader_epoch=-1)))
    if request.share_session_epoch == CLOSE_EPOCH:
        context.shares.release_member(group_id, member_id)
    return after_persisting(context, lambda: ShareAcknowledgeResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
        responses=[_Topic(topic_id=t, partitions=p) for t, p in by_topic.items()], node_endpoints=[]))


HANDLERS = [Handler(API_KEY, 1, 1, handle)]
