"""DeleteGroups (key 42), v0–v2: removes empty groups and their committed offsets."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse

API_KEY = 42


def handle(context: BrokerContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    runtime = context.groups
    errors, effects = runtime.coordinator.delete_groups(request.groups_names, context.now_ms)
    runtime.apply(effects)
    return DeleteGroupsResponse(throttle_time_ms=0, results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=error)
        for group_id, error in errors.items()])


HANDLERS = [Handler(API_KEY, 0, 2, handle)]
