"""ShareGroupDescribe (key 77), v1: a share group's members, epochs and assignments.

GROUP_ID_NOT_FOUND for an id no share group has (a classic group's included), NOT_COORDINATOR
from a broker that does not coordinate the group, GROUP_AUTHORIZATION_FAILED without DESCRIBE on
it. Authorized operations are not computed: the field keeps its "not requested" value.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ShareGroupDescribeRequest, ShareGroupDescribeResponse

API_KEY = 77
_Group = ShareGroupDescribeResponse.DescribedGroup
_Member = ShareGroupDescribeResponse.Member
_Assignment = ShareGroupDescribeResponse.Assignment
_TopicPartitions = ShareGroupDescribeResponse.TopicPartitions


def _describe(context: BrokerContext, group_id: str) -> _Group:
    shares = context.shares
    error = shares.coordinator_error(group_id) if group_id else ErrorCode.INVALID_GROUP_ID
    if error is None and not context.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if error is not None:
        return _Group(error_code=error, group_id=group_id, group_state="", assignor_name="", members=[])
    group = shares.groups.groups.get(group_id)
    if group is None:
        return _Group(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {group_id} not found.",
                      group_id=group_id, group_state="Dead", assignor_name="", members=[])
    members = []
    for member in sorted(group.members.values(), key=lambda m: m.member_id):
        topics = []
        for topic, partitions in sorted(member.assignment.items()):
            topic_id = shares.topic_id(topic)
            if topic_id is not None:
                topics.append(_TopicPartitions(topic_id=topic_id, topic_name=topic, partitions=sorted(partitions)))
        members.append(_Member(member_id=member.member_id, rack_id=member.rack_id, member_epoch=member.member_epoch,
                               client_id=member.client_id, client_host=member.client_host,
                               subscribed_topic_names=sorted(member.subscribed),
                               assignment=_Assignment(topic_partitions=topics)))
    return _Group(error_code=ErrorCode.NONE, group_id=group_id, group_state=group.state,
                  group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch, assignor_name="simple",
                  members=members)


def handle(context: BrokerContext, request: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    return ShareGroupDescribeResponse(throttle_time_ms=0,
                                      groups=[_describe(context, group_id) for group_id in request.group_ids])


HANDLERS = [Handler(API_KEY, 1, 1, handle)]
