"""DescribeGroups (key 15), v0–v5: state, protocol and members of classic groups (each needs
DESCRIBE on the group; GROUP_AUTHORIZATION_FAILED otherwise), and each group's authorized
operations when asked (v3+)."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.authorized_operations import OMITTED, authorized_operations
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse

API_KEY = 15


def handle(context: BrokerContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    allowed = context.allowed_names(AclOperation.DESCRIBE, ResourceType.GROUP, request.groups)
    descriptions = context.groups.coordinator.describe_groups([g for g in request.groups if g in allowed])
    refused = [DescribeGroupsResponse.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=g,
                                                     authorized_operations=OMITTED)
               for g in request.groups if g not in allowed]
    return DescribeGroupsResponse(throttle_time_ms=0, groups=refused + [
        DescribeGroupsResponse.DescribedGroup(
            error_code=d.error, group_id=d.group_id, group_state=d.state, protocol_type=d.protocol_type,
            protocol_data=d.protocol, authorized_operations=authorized_operations(
                context, ResourceType.GROUP, d.group_id) if request.include_authorized_operations else OMITTED,
            members=[
                DescribeGroupsResponse.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                    client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                for m in d.members])
        for d in descriptions])


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
