"""A consumer group driven through rebalances the way consumers use an assignor, for the sticky tests.

Each member has its own assignor instance (state kept through `on_assignment`) and sends a
Subscription as Java's consumer does: eager members have revoked everything before joining,
cooperative members report what they own; both report the generation they last joined in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gregor.client.assignors import PartitionAssignor, RebalanceProtocol, Subscription, TopicPartition


@dataclass
class Member:
    """One consumer: its assignor, subscription, owned partitions and last generation."""

    assignor: PartitionAssignor
    topics: tuple[str, ...]
    owned: frozenset[TopicPartition] = frozenset()
    generation: int | None = None


@dataclass
class Group:
    """The members of a group and the partitions of the topics they may subscribe to."""

    assignor_class: type[PartitionAssignor]
    partitions_per_topic: Mapping[str, int]
    members: dict[str, Member] = field(default_factory=dict)
    generation: int = 0

    @property
    def cooperative(self) -> bool:
        return self.assignor_class.supported_protocols[0] is RebalanceProtocol.COOPERATIVE

    def join(self, member_id: str, topics: tuple[str, ...]) -> None:
        self.members[member_id] = Member(self.assignor_class(), topics)

    def leave(self, member_id: str) -> None:
        del self.members[member_id]

    def owned(self) -> dict[str, frozenset[TopicPartition]]:
        return {member_id: member.owned for member_id, member in self.members.items()}

    def subscriptions(self) -> dict[str, Subscription]:
        return {member_id: Subscription(
                    topics=member.topics,
                    user_data=member.assignor.subscription_user_data(member.topics),
                    owned_partitions=tuple(sorted(member.owned)) if self.cooperative else (),
                    generation_id=member.generation)
                for member_id, member in self.members.items()}

    def rebalance(self) -> dict[str, frozenset[TopicPartition]]:
        """One rebalance, led by a fresh assignor; every member takes its new assignment."""
        assignments = self.assignor_class().assign(self.partitions_per_topic, self.subscriptions())
        self.generation += 1
        for member_id, member in self.members.items():
            member.assignor.on_assignment(assignments[member_id], self.generation)
            member.owned = frozenset(assignments[member_id].partitions)
            member.generation = self.generation
        return self.owned()
