"""ShareGroupHeartbeat (key 76), v1: a share group member joins (epoch 0), heartbeats, leaves (-1).

Served by the group's coordinator (the leader of its `__consumer_offsets` partition, as for every
group); the decisions are `coordinator.share.ShareGroupCoordinator`'s. The assignment comes
back whenever the member's epoch moves or it sends its subscription, as topic ids and
partitions. It needs READ on the group (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on every
subscribed topic (TOPIC_AUTHORIZATION_FAILED), as Kafka. A group id taken by a classic or a
consumer-protocol (KIP-848) group gets GROUP_ID_NOT_FOUND; a cluster whose
`share.version` feature is 0 answers UNSUPPORTED_VERSION, as Kafka's. v0 (Kafka 4.0's early
access) is not offered, as Kafka 4.1 no longer does.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable

from gregor.broker.handlers import BrokerContext, Handler
from gregor.coordinator.share.share_group import HeartbeatResult
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse

API_KEY = 76
_Assignment = ShareGroupHeartbeatResponse.Assignment
_TopicPartitions = ShareGroupHeartbeatResponse.TopicPartitions


def handle(context: BrokerContext, request: ShareGroupHeartbeatRequest):
    if "__share_group_state" not in context.metadata.image.topics:
        return _after_creating_state_topic(context, request)
    return _answer(context, request)


async def _after_creating_state_topic(context: BrokerContext,
                                      request: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    await context.shares.store.ensure_topic()
    answer = _answer(context, request)
    return answer if isinstance(answer, ShareGroupHeartbeatResponse) else await answer


def _error(code: ErrorCode, message: str | None) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(throttle_time_ms=0, error_code=code, error_message=message,
                                       member_id=None, member_epoch=0, heartbeat_interval_ms=0, assignment=None)


def _answer(context: BrokerContext, request: ShareGroupHeartbeatRequest
            ) -> ShareGroupHeartbeatResponse | Awaitable[ShareGroupHeartbeatResponse]:
    shares = context.shares
    if not shares.enabled():
        return _error(ErrorCode.UNSUPPORTED_VERSION, "Share groups are off in this cluster (share.version=0).")
    if not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    subscribed = request.subscribed_topic_names or []
    if len(context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, subscribed)) < len(set(subscribed)):
        return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Not authorized to describe every subscribed topic.")
    error = shares.coordinator_error(request.group_id) if request.group_id else None
    if error is not None:
        return _error(error, None)
    groups = context.groups.coordinator
    if request.group_id in groups.groups or request.group_id in groups.consumer_groups:
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a share group.")
    if request.member_epoch != 0 and not request.member_id:
        return _error(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    result = shares.heartbeat(request.group_id, request.member_id, request.member_epoch, request.rack_id,
                              request.subscribed_topic_names, context.header.client_id or "",
                              context.connection.peer.rsplit(":", 1)[0])
    if result.error:
        return _error(result.error, result.message)
    pending = shares.persist_group(request.group_id)
    if pending is not None:
        return _after_writing(context, result, pending)
    return _response(context, result)


async def _after_writing(context: BrokerContext, result: HeartbeatResult,
                         pending: asyncio.Future[ErrorCode]) -> ShareGroupHeartbeatResponse:
    """Answered once the membership change is in `__consumer_offsets`, as Kafka's coordinator
    answers; a failed write is COORDINATOR_NOT_AVAILABLE (the member retries)."""
    error = await asyncio.shield(pending)
    if error:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"The share group could not be written: {error.name}.")
    return _response(context, result)


def _response(context: BrokerContext, result: HeartbeatResult) -> ShareGroupHeartbeatResponse:
    shares = context.shares
    assignment = None
    if result.assignment is not None:
        topics = []
        for topic, partitions in sorted(result.assignment.items()):
            topic_id = shares.topic_id(topic)
            if topic_id is not None:
                topics.append(_TopicPartitions(topic_id=topic_id, partitions=sorted(partitions)))
        assignment = _Assignment(topic_partitions=topics)
    return ShareGroupHeartbeatResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
                                       member_id=result.member_id, member_epoch=result.member_epoch,
                                       heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)


HANDLERS = [Handler(API_KEY, 1, 1, handle)]
