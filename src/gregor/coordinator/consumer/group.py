"""A consumer group's state (Kafka's ConsumerGroup): epochs, members, the target assignment.

Three epochs drive it. The group epoch moves whenever what the assignment depends on changes
(a member joins, leaves or changes its subscription, a subscribed topic appears, goes or grows);
the assignment epoch is the group epoch the target assignment was computed at; each member's
epoch is the assignment epoch it has reconciled to. The state follows from them:

    Empty        no members
    Assigning    group epoch > assignment epoch (a new target is due)
    Reconciling  some member is not yet at the assignment epoch with all its target partitions
    Stable       every member has its target
    Dead         deleted (dropped from the coordinator at once)

The group also knows who holds each partition now (assigned or still to be revoked), which is
what keeps a partition from having two owners during reconciliation.
"""

from __future__ import annotations

import enum
import uuid
from collections import Counter
from typing import Iterable, Mapping, NamedTuple

from gregor.coordinator.consumer.assignment import EMPTY, Assignment, pairs
from gregor.coordinator.consumer.member import ConsumerGroupMember, MemberState
from gregor.coordinator.consumer.topic_regex import matching_topics


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class TopicInfo(NamedTuple):
    """A topic as the assignment sees it (ConsumerGroupPartitionMetadataValue's TopicMetadata)."""

    topic_id: uuid.UUID
    name: str
    num_partitions: int
    #: The racks of each partition's replicas, by partition index; empty when no replica has a
    #: rack (Kafka stores an empty list then too). A change of racks is a metadata change.
    partition_racks: tuple[frozenset[str], ...] = ()


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, TopicInfo] = {}
        self._owners: dict[tuple[uuid.UUID, int], str] = {}

    def __repr__(self) -> str:
        return (f"ConsumerGroup({self.group_id!r}, {self.state.value}, epoch={self.group_epoch}, "
                f"assignment_epoch={self.assignment_epoch}, members={list(self.members)})")

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(member.member_epoch != self.assignment_epoch or member.state is not MemberState.STABLE
               for member in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # -- members

    def put_member(self, member: ConsumerGroupMember) -> None:
        """Add or replace a member, keeping the partition holders and static ids in step."""
        self._release(self.members.get(member.member_id))
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for key in (*pairs(member.assigned_partitions), *pairs(member.partitions_pending_revocation)):
            self._owners[key] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        self._release(member)
        if member is not None and member.instance_id is not None \
                and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        return member

    def _release(self, member: ConsumerGroupMember | None) -> None:
        if member is None:
            return
        for key in (*pairs(member.assigned_partitions), *pairs(member.partitions_pending_revocation)):
            if self._owners.get(key) == member.member_id:
                del self._owners[key]

    def owner_of(self, topic_id: uuid.UUID, partition: int) -> str | None:
        return self._owners.get((topic_id, partition))

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, EMPTY)

    # -- subscriptions

    def subscribed_topic_names(self, topic_names: Iterable[str],
                               members: Iterable[ConsumerGroupMember] | None = None) -> set[str]:
        """Every topic some member subscribes to by name, or by a regex matching one of
        `topic_names` (the existing topics)."""
        names: set[str] = set()
        regexes: set[str] = set()
        for member in self.members.values() if members is None else members:
            names.update(member.subscribed_topic_names)
            if member.subscribed_topic_regex is not None:
                regexes.add(member.subscribed_topic_regex)
        if regexes:
            existing = list(topic_names)
            for regex in regexes:
                names.update(matching_topics(regex, existing))
        return names

    def member_topic_ids(self, member: ConsumerGroupMember) -> frozenset[uuid.UUID]:
        """The ids of the topics of the subscription metadata that `member` subscribes to."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex is not None:
            names.update(matching_topics(member.subscribed_topic_regex, self.subscription_metadata))
        return frozenset(info.topic_id for name, info in self.subscription_metadata.items() if name in names)

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (ties: the first asked for), else `default`."""
        votes = Counter(member.server_assignor for member in self.members.values()
                        if member.server_assignor is not None)
        return max(votes, key=votes.__getitem__) if votes else default

    def topic_names_by_id(self) -> Mapping[uuid.UUID, str]:
        return {info.topic_id: name for name, info in self.subscription_metadata.items()}
