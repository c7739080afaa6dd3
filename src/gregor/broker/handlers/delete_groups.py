"""DeleteGroups (key 42), v0–v2: removes empty groups and their committed offsets (each needs
DELETE on the group; GROUP_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse

API_KEY = 42


def handle(context: BrokerContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    runtime = context.groups
    allowed = context.allowed_names(AclOperation.DELETE, ResourceType.GROUP, request.groups_names)
    errors, effects = runtime.coordinator.delete_groups([g for g in request.groups_names if g in allowed],
                                                        context.now_ms)
    runtime.apply(effects)
    errors = {**{g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in request.groups_names if g not in allowed},
              **errors}
    return DeleteGroupsResponse(throttle_time_ms=0, results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=error)
        for group_id, error in errors.items()])


HANDLERS = [Handler(API_KEY, 0, 2, handle)]
