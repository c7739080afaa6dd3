"""The interface every consumer-group partition assignor implements, as Java's ConsumerPartitionAssignor.

The group leader decodes each member's Subscription, calls `assign` with the partition count of
every topic it knows, and encodes one Assignment per member. Every member then hands its own
Assignment and the new generation to `on_assignment`, so stateful assignors (sticky) can put
what they remember into `subscription_user_data` at the next join.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Collection, Mapping
from typing import ClassVar

from gregor.client.assignors.consumer_protocol import Assignment, Subscription
from gregor.client.assignors.topic_partition import (
    TopicPartition, java_partition_key, java_string_key,
)


class RebalanceProtocol(enum.IntEnum):
    """How members hand partitions over (KIP-429); the ids are Java's RebalanceProtocol ids.

    EAGER: every member revokes everything before joining. COOPERATIVE: members keep what they
    own and revoke only what the new assignment takes away, then rejoin so it can move.
    """

    EAGER = 0
    COOPERATIVE = 1


class PartitionAssignor(abc.ABC):
    """A named strategy for spreading the subscribed topics' partitions over a group's members."""

    name: ClassVar[str]
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    def subscription_user_data(self, topics: Collection[str]) -> bytes | None:
        """The user data this member puts in its Subscription; None unless the assignor keeps state."""
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Remember this member's new assignment; stateless assignors have nothing to remember."""

    def assign(self, partitions_per_topic: Mapping[str, int],
               subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        """Every member's Assignment, given each topic's partition count and each member's Subscription.

        Like Java's AbstractPartitionAssignor, topics nobody subscribes to and topics without
        partitions (unknown to the leader's metadata) are left out; every member gets an
        Assignment, empty if need be, with its partitions in Java's topic-partition order.
        """
        subscribed = {topic for subscription in subscriptions.values() for topic in subscription.topics}
        known = {topic: count for topic, count in partitions_per_topic.items()
                 if topic in subscribed and count > 0}
        return {member: Assignment(tuple(sorted(partitions, key=java_partition_key)))
                for member, partitions in self.assign_partitions(known, subscriptions).items()}

    @abc.abstractmethod
    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        """Each member's partitions; `partitions_per_topic` holds only subscribed topics with partitions."""


def member_order_key(member_id: str, subscription: Subscription) -> tuple[int, bytes, bytes]:
    """Java's MemberInfo order: static members first by group.instance.id, then dynamic ones by member id.

    Ordering static members by their stable instance id keeps range and round-robin assignments
    unchanged when static members restart with new member ids.
    """
    if subscription.group_instance_id is not None:
        return 0, java_string_key(subscription.group_instance_id), java_string_key(member_id)
    return 1, java_string_key(member_id), b""
