"""ListGroups (key 16), v0–v5: every group this coordinator knows; v4+ filter by state, v5+ by type."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.protocol.messages import ListGroupsRequest, ListGroupsResponse

API_KEY = 16


def handle(context: BrokerContext, request: ListGroupsRequest) -> ListGroupsResponse:
    result = context.groups.coordinator.list_groups(
        request.states_filter if context.version >= 4 else (),
        request.types_filter if context.version >= 5 else ())
    return ListGroupsResponse(throttle_time_ms=0, error_code=result.error, groups=[
        ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                                       group_type=g.group_type)
        for g in result.groups])


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
