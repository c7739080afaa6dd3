"""Share groups as the admin client describes them (Kafka's ShareGroupDescription,
ShareMemberDescription and GroupListing of type share)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gregor.client.network import Node


@dataclass(frozen=True)
class ShareGroupListing:
    group_id: str
    state: str | None
    """None when the broker's ListGroups version (< v4) does not say."""


@dataclass(frozen=True)
class ShareMemberDescription:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: list[str]
    assignment: list[tuple[str, int]]
    """(topic, partition) pairs the member is assigned."""


@dataclass(frozen=True)
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ShareMemberDescription]
    coordinator: Node | None


def share_group_description(group: Any, coordinator: Node | None) -> ShareGroupDescription:
    """A ShareGroupDescribe response's group, as the admin client returns it."""
    members = [ShareMemberDescription(
        member_id=member.member_id, member_epoch=member.member_epoch, client_id=member.client_id,
        client_host=member.client_host, rack_id=member.rack_id, subscribed_topics=list(member.subscribed_topic_names),
        assignment=sorted((topic.topic_name, partition) for topic in member.assignment.topic_partitions
                          for partition in topic.partitions))
        for member in group.members]
    return ShareGroupDescription(
        group_id=group.group_id, state=group.group_state, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch, assignor=group.assignor_name, members=members,
        coordinator=coordinator)
