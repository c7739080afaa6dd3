"""ConsumerGroupDescribe (key 69), v0: KIP-848 groups with their epochs, assignor and members'
current and target assignments. A classic group (or none) is GROUP_ID_NOT_FOUND, as in Kafka.
Each group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED otherwise); its authorized operations are
answered when asked."""

from __future__ import annotations

from typing import Mapping
import uuid

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.authorized_operations import OMITTED, authorized_operations
from gregor.coordinator.consumer.assignment import Assignment
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse

API_KEY = 69
_Response = ConsumerGroupDescribeResponse


def handle(context: BrokerContext, request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    allowed = context.allowed_names(AclOperation.DESCRIBE, ResourceType.GROUP, request.group_ids)
    groups = [_Response.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=group_id)
              for group_id in request.group_ids if group_id not in allowed]
    for d in context.groups.coordinator.consumer_group_describe([g for g in request.group_ids if g in allowed]):
        names = d.topic_names
        groups.append(_Response.DescribedGroup(
            error_code=d.error, error_message=d.error_message, group_id=d.group_id, group_state=d.state,
            group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch, assignor_name=d.assignor_name,
            authorized_operations=authorized_operations(context, ResourceType.GROUP, d.group_id)
            if request.include_authorized_operations else OMITTED,
            members=[_Response.Member(
                member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_assignment(m.assignment, names, context),
                target_assignment=_assignment(m.target_assignment, names, context)) for m in d.members]))
    return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=groups)


def _assignment(assignment: Assignment, names: Mapping[uuid.UUID, str],
                context: BrokerContext) -> ConsumerGroupDescribeResponse.Assignment:
    return _Response.Assignment(topic_partitions=[
        _Response.TopicPartitions(topic_id=topic_id,
                                  topic_name=names.get(topic_id) or context.metadata.topic_name(topic_id) or "",
                                  partitions=sorted(partitions))
        for topic_id, partitions in sorted(assignment.items())])


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
