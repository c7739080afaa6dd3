"""ListGroups (key 16), v0–v5: every group this coordinator knows, classic and share; v4+ filter by
state, v5+ by type.

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
    groups = [ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                                             group_type=g.group_type)
              for g in result.groups]
    groups.extend(share_groups(context, request))
    names = [g.group_id for g in groups]
    listed = set(names) if context.allowed(AclOperation.DESCRIBE) else context.allowed_names(
        AclOperation.DESCRIBE, ResourceType.GROUP, names)
    return ListGroupsResponse(throttle_time_ms=0, error_code=result.error,
                              groups=[g for g in groups if g.group_id in listed])


def share_groups(context: BrokerContext, request: ListGroupsRequest) -> list[ListGroupsResponse.ListedGroup]:
    """The share groups this broker coordinates (protocol and group type "share"), filtered alike."""
    states = {s.lower() for s in request.states_filter} if context.version >= 4 else set()
    types = {t.lower() for t in request.types_filter} if context.version >= 5 else set()
    if types and "share" not in types:
        return []
    return [ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type="share", group_state=g.state,
                                           group_type="share")
            for g in context.shares.groups.groups.values() if not states or g.state.lower() in states]


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
