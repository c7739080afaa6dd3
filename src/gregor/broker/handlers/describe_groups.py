"""DescribeGroups (key 15), v0–v5: state, protocol and members of classic groups."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse

API_KEY = 15
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def handle(context: BrokerContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    descriptions = context.groups.coordinator.describe_groups(request.groups)
    return DescribeGroupsResponse(throttle_time_ms=0, groups=[
        DescribeGroupsResponse.DescribedGroup(
            error_code=d.error, group_id=d.group_id, group_state=d.state, protocol_type=d.protocol_type,
            protocol_data=d.protocol, authorized_operations=AUTHORIZED_OPERATIONS_OMITTED, members=[
                DescribeGroupsResponse.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                    client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                for m in d.members])
        for d in descriptions])


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
