"""LeaveGroup (key 13), v0–v5: one member (v0–v2) or a batch of members (v3+) leave."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import LeaveGroupRequest, LeaveGroupResponse

API_KEY = 13


def handle(context: BrokerContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    version = context.version
    if not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if version >= 3:
        members = [(m.member_id, m.group_instance_id, m.reason if version >= 5 else None) for m in request.members]
    else:
        members = [(request.member_id, None, None)]
    runtime = context.groups
    result, effects = runtime.coordinator.leave_group(group_id=request.group_id, members=members,
                                                      now_ms=context.now_ms)
    runtime.apply(effects)
    error = result.error
    if version < 3 and not error and result.members:
        error = result.members[0].error
    return LeaveGroupResponse(throttle_time_ms=0, error_code=error, members=[
        LeaveGroupResponse.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                          error_code=m.error)
        for m in result.members])


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
