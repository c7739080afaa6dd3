"""What the sticky and cooperative-sticky assignors share (Java's AbstractStickyAssignor).

Both aim for a balanced assignment that moves as few partitions as possible. They differ only in
where a member's previous partitions and generation come from (`member_data`) and in what the
cooperative one does with partitions that change owner. When every member subscribes to the
same topics the constrained fast path applies; otherwise the general path does.

Rack-aware sticky assignment (KIP-881) is not implemented: rack ids are ignored.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass

from gregor.client.assignors.assignor import PartitionAssignor
from gregor.client.assignors.constrained_assignment import assign_constrained
from gregor.client.assignors.consumer_protocol import Subscription
from gregor.client.assignors.general_assignment import assign_general
from gregor.client.assignors.previous_ownership import (
    MemberData, previous_generation_owners, settle_claims,
)
from gregor.client.assignors.topic_partition import TopicPartition


@dataclass
class StickyAssignment:
    """A sticky assignment, with the partitions that change owner when the fast path knows them.

    `transferring` maps a partition to its new owner; it is None after the general path, where
    the cooperative assignor works it out from the members' owned partitions instead.
    """

    assignment: dict[str, list[TopicPartition]]
    transferring: dict[TopicPartition, str] | None


class AbstractStickyAssignor(PartitionAssignor):
    """Balanced assignment that keeps partitions where they were as far as balance allows."""

    @abc.abstractmethod
    def member_data(self, subscription: Subscription) -> MemberData:
        """The partitions a member says it owned, and in which generation."""

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        """The sticky assignment of every member."""
        return self.sticky_assignment(partitions_per_topic, subscriptions).assignment

    def sticky_assignment(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> StickyAssignment:
        """Settle previous ownership, then take the constrained or the general path."""
        member_data = {member: self.member_data(subscription) for member, subscription in subscriptions.items()}
        previous = settle_claims(partitions_per_topic, member_data)
        topics_of = {member: frozenset(subscription.topics) for member, subscription in subscriptions.items()}
        if len(set(topics_of.values())) == 1:
            constrained = assign_constrained(partitions_per_topic, previous.owned, previous.claimed_by_many)
            return StickyAssignment(constrained.assignment, constrained.transferring)
        general = assign_general(partitions_per_topic, topics_of, previous.owned,
                                 previous_generation_owners(member_data))
        return StickyAssignment(general, None)
