"""Heartbeat (key 12), v0–v4: keeps a member's session alive and tells it to rejoin."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import HeartbeatRequest, HeartbeatResponse

API_KEY = 12


def handle(context: BrokerContext, request: HeartbeatRequest) -> HeartbeatResponse:
    if not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return HeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    runtime = context.groups
    error = runtime.coordinator.heartbeat(
        group_id=request.group_id, member_id=request.member_id,
        group_instance_id=request.group_instance_id if context.version >= 3 else None,
        generation_id=request.generation_id, now_ms=context.now_ms)
    runtime.apply(())
    return HeartbeatResponse(throttle_time_ms=0, error_code=error)


HANDLERS = [Handler(API_KEY, 0, 4, handle)]
