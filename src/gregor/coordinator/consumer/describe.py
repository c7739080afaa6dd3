"""ConsumerGroupDescribe and the consumer groups' part of ListGroups."""

from __future__ import annotations

from typing import Iterable

from gregor.coordinator.consumer.group import ConsumerGroup
from gregor.coordinator.consumer.results import ConsumerGroupDescription, DescribedMember
from gregor.protocol.error_codes import ErrorCode

CONSUMER_GROUP_TYPE = "consumer"
CONSUMER_PROTOCOL_TYPE = "consumer"


def describe(group_id: str, group: ConsumerGroup | None, is_classic: bool,
             default_assignor: str) -> ConsumerGroupDescription:
    """GROUP_ID_NOT_FOUND for a missing group or one of another type, as Kafka answers."""
    if group is None:
        message = f"Group {group_id} is not a consumer group." if is_classic else f"Group {group_id} not found."
        return ConsumerGroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message)
    members = tuple(DescribedMember(
        member.member_id, member.instance_id, member.rack_id, member.member_epoch, member.client_id,
        member.client_host, member.subscribed_topic_names, member.subscribed_topic_regex,
        member.assigned_partitions, group.target_of(member.member_id)) for member in group.members.values())
    return ConsumerGroupDescription(group_id, ErrorCode.NONE, None, group.state.value, group.group_epoch,
                                    group.assignment_epoch, group.preferred_assignor(default_assignor), members,
                                    group.topic_names_by_id())


def matches_filters(group: ConsumerGroup, states: set[str], types: set[str]) -> bool:
    """ListGroups' filters (lower-cased; empty means all)."""
    return (not states or group.state.value.lower() in states) and (not types or CONSUMER_GROUP_TYPE in types)


def listed(groups: Iterable[ConsumerGroup]) -> list[tuple[str, str, str, str]]:
    """(group id, protocol type, state, group type) of each group, as ListGroups lists them."""
    return [(group.group_id, CONSUMER_PROTOCOL_TYPE, group.state.value, CONSUMER_GROUP_TYPE) for group in groups]
