"""ListGroups (key 16), v0–v5: every group this coordinator knows; v4+ filter by state, v5+ by type.

With DESCRIBE on the cluster every group is listed, otherwise those the principal may DESCRIBE."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.messages import ListGroupsRequest, ListGroupsResponse

API_KEY = 16


def handle(context: BrokerContext, request: ListGroupsRequest) -> ListGroupsResponse:
    result = context.groups.coordinator.list_groups(
        request.states_filter if context.version >= 4 else (),
        request.types_filter if context.version >= 5 else ())
    names = [g.group_id for g in result.groups]
    listed = set(names) if context.allowed(AclOperation.DESCRIBE) else context.allowed_names(
        AclOperation.DESCRIBE, ResourceType.GROUP, names)
    return ListGroupsResponse(throttle_time_ms=0, error_code=result.error, groups=[
        ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                                       group_type=g.group_type)
        for g in result.groups if g.group_id in listed])


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
