"""SyncGroup (key 14), v0–v5: the leader hands out assignments; everyone waits for theirs."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.coordinator.results import SyncResult
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import SyncGroupRequest, SyncGroupResponse

API_KEY = 14


def handle(context: BrokerContext, request: SyncGroupRequest):
    version = context.version
    if not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, assignment=b"")

    def call(token: object) -> list:
        return context.groups.coordinator.sync_group(
            token, group_id=request.group_id, generation_id=request.generation_id, member_id=request.member_id,
            group_instance_id=request.group_instance_id if version >= 3 else None,
            protocol_type=request.protocol_type if version >= 5 else None,
            protocol_name=request.protocol_name if version >= 5 else None,
            assignments={a.member_id: a.assignment for a in request.assignments}, now_ms=context.now_ms)

    return context.groups.park(call, SyncResult, _response)


def _response(result: SyncResult) -> SyncGroupResponse:
    return SyncGroupResponse(throttle_time_ms=0, error_code=result.error, protocol_type=result.protocol_type,
                             protocol_name=result.protocol_name, assignment=result.assignment)


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
