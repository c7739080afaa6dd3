"""DeleteGroups (key 42), v0–v2: removes empty groups and their committed offsets (each needs
DELETE on the group; GROUP_AUTHORIZATION_FAILED otherwise). A share group's state on every
partition goes with it (`broker.share_offsets.delete_group`: DeleteShareGroupState), as Kafka."""

from __future__ import annotations

from gregor.broker import share_offsets
from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse

API_KEY = 42


def handle(context: BrokerContext, request: DeleteGroupsRequest):
    runtime = context.groups
    allowed = context.allowed_names(AclOperation.DELETE, ResourceType.GROUP, request.groups_names)
    shared = [g for g in request.groups_names if g in allowed and g in context.shares.groups.groups]
    errors, effects = runtime.coordinator.delete_groups(
        [g for g in request.groups_names if g in allowed and g not in shared], context.now_ms)
    runtime.apply(effects)
    errors = {**{g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in request.groups_names if g not in allowed},
              **errors}
    if shared:
        return _after_deleting_share_groups(context, shared, errors)
    return _response(errors)


async def _after_deleting_share_groups(context: BrokerContext, shared: list[str],
                                       errors: dict[str, ErrorCode]) -> DeleteGroupsResponse:
    for group_id in shared:
        errors[group_id] = (context.shares.coordinator_error(group_id)
                            or await share_offsets.delete_group(context.shares, group_id))
    return _response(errors)


def _response(errors: dict[str, ErrorCode]) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(throttle_time_ms=0, results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=error)
        for group_id, error in errors.items()])


HANDLERS = [Handler(API_KEY, 0, 2, handle)]
