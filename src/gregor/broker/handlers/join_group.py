"""JoinGroup (key 11), v0–v9, answered when the group's rebalance completes.

v4+ first hand a new member its id (MEMBER_ID_REQUIRED); v5+ carry group.instance.id (static
membership); v9 may tell a static leader to skip the assignment. Needs READ on the group
(GROUP_AUTHORIZATION_FAILED otherwise), as SyncGroup, Heartbeat and LeaveGroup do.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.coordinator.results import JoinResult
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import JoinGroupRequest, JoinGroupResponse

API_KEY = 11


def handle(context: BrokerContext, request: JoinGroupRequest):
    version = context.version
    if not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return JoinGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, generation_id=-1,
                                 protocol_name=None if version >= 7 else "", member_id=request.member_id)
    rebalance_timeout_ms = request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms

    def call(token: object) -> list:
        return context.groups.coordinator.join_group(
            token, group_id=request.group_id, member_id=request.member_id,
            group_instance_id=request.group_instance_id if version >= 5 else None,
            protocol_type=request.protocol_type, protocols=[(p.name, p.metadata) for p in request.protocols],
            session_timeout_ms=request.session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms,
            client_id=context.header.client_id or "", client_host="/" + context.connection.peer.rsplit(":", 1)[0],
            require_known_member_id=version >= 4, supports_skip_assignment=version >= 9,
            reason=request.reason if version >= 8 else None, now_ms=context.now_ms)

    return context.groups.park(call, JoinResult, lambda result: _response(result, version))


def _response(result: JoinResult, version: int) -> JoinGroupResponse:
    """Protocol name is nullable from v7; older versions carry an empty string instead."""
    return JoinGroupResponse(
        throttle_time_ms=0, error_code=result.error, generation_id=result.generation_id,
        protocol_type=result.protocol_type, protocol_name=result.protocol_name if version >= 7 else result.protocol_name or "", leader=result.leader,
        skip_assignment=result.skip_assignment, member_id=result.member_id,
        members=[JoinGroupResponse.JoinGroupResponseMember(member_id=m.member_id,
                                                           group_instance_id=m.group_instance_id,
                                                           metadata=m.metadata)
                 for m in result.members])


HANDLERS = [Handler(API_KEY, 0, 9, handle)]
