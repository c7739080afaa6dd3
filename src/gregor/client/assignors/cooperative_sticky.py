"""Kafka's CooperativeStickyAssignor ("cooperative-sticky"): the sticky assignment, moved in two steps.

Under the cooperative protocol members keep their partitions while the group rebalances. A
partition that the sticky assignment moves from one member to another is therefore left out of
the new owner's assignment in this rebalance: its old owner sees it missing, revokes it and
rejoins, and the follow-up rebalance gives it to the new owner. No partition is ever owned by
two members at once.

Previous ownership comes from the Subscription's owned partitions; the generation from its
generation id (version 2 and later) or else from the user data, a bare int32.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.primitives import Reader, Writer
from gregor.client.assignors.abstract_sticky import AbstractStickyAssignor
from gregor.client.assignors.assignor import RebalanceProtocol
from gregor.client.assignors.consumer_protocol import Assignment, Subscription
from gregor.client.assignors.previous_ownership import DEFAULT_GENERATION, MemberData
from gregor.client.assignors.rebalance_changes import partitions_changing_owner
from gregor.client.assignors.topic_partition import TopicPartition


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """The sticky assignor for the cooperative protocol (falls back to eager like Java's)."""

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Keep the generation for the next join's user data."""
        self._generation = generation_id

    def subscription_user_data(self, topics: Collection[str]) -> bytes | None:
        """The generation of the last assignment, for leaders that read subscriptions below v2."""
        writer = Writer()
        writer.int32(self._generation)
        return writer.getvalue()

    def member_data(self, subscription: Subscription) -> MemberData:
        """Owned partitions from the Subscription; generation from its field or else the user data."""
        if subscription.generation_id is not None:
            return MemberData(subscription.owned_partitions, subscription.generation_id)
        if subscription.user_data is None:
            return MemberData(subscription.owned_partitions)
        try:
            generation = Reader(subscription.user_data).int32()
        except DecodeError:
            generation = DEFAULT_GENERATION
        return MemberData(subscription.owned_partitions, generation)

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        """The sticky assignment minus every partition that still has to be revoked by another member."""
        sticky = self.sticky_assignment(partitions_per_topic, subscriptions)
        transferring = sticky.transferring
        if transferring is None:
            owned = {member: subscription.owned_partitions for member, subscription in subscriptions.items()}
            transferring = partitions_changing_owner(owned, sticky.assignment)
        return {member: [partition for partition in partitions if transferring.get(partition) != member]
                for member, partitions in sticky.assignment.items()}

