"""ShareAcknowledge (key 79), v1: acknowledgements without a fetch, in the member's share session.

The session must exist (epoch 0 is INVALID_SHARE_SESSION_EPOCH: only ShareFetch opens one);
each partition's batches are applied all-or-nothing (INVALID_RECORD_STATE for a record the
member does not hold); epoch -1 closes the session afterwards and returns the member's other
records here to the group. v0 (Kafka 4.0's early access) is not offered.
"""

from __future__ import annotations

import uuid

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.share_acknowledgements import acknowledge, named_partitions
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


def handle(context: BrokerContext, request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if not group_id or not member_id:
        return _top_error(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.")
    if epoch == OPEN_EPOCH:
        return _top_error(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session.")
    shares = context.shares
    error, _ = shares.sessions.update(group_id, member_id, epoch, [], [])
    if error:
        return _top_error(error)
    by_topic: dict[uuid.UUID, list[_Partition]] = {}
    for named in named_partitions(context, request.topics):
        code = acknowledge(context, group_id, member_id, named)
        by_topic.setdefault(named.topic_id, []).append(_Partition(
            partition_index=named.index, error_code=code, current_leader=_Leader(leader_id=-1, leader_epoch=-1)))
    if epoch == CLOSE_EPOCH:
        shares.release_member(group_id, member_id)
    shares.settle()
    return ShareAcknowledgeResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
                                    responses=[_Topic(topic_id=t, partitions=p) for t, p in by_topic.items()],
                                    node_endpoints=[])


HANDLERS = [Handler(API_KEY, 1, 1, handle)]
