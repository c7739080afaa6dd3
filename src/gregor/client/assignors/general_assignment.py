"""The sticky assignors' general path, for groups whose members subscribe to different topics.

Keeps every previously owned partition whose owner still subscribes to its topic, gives the
rest to the least loaded subscriber, then moves partitions from members that hold at least two
more than some other subscriber of the same topic until the assignment is balanced (Java's
GeneralAssignmentBuilder and its isBalanced). Topics with a single subscriber and members that
cannot gain or lose anything are left out of the balancing.

Every move goes from a member to one holding at least two fewer partitions, so each move
strictly lowers the balance score (the sum of load differences over all pairs of members).
Java's builder can move a partition between other members (see partition_movements) and so
keeps a copy to fall back to when balancing did not lower the score; here that cannot happen.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from gregor.client.assignors.partition_movements import PartitionMovements
from gregor.client.assignors.topic_partition import TopicPartition, java_string_key


def assign_general(partitions_per_topic: Mapping[str, int],
                   topics_of: Mapping[str, Set[str]],
                   owned: Mapping[str, list[TopicPartition]],
                   previous_owners: Mapping[TopicPartition, str]) -> dict[str, list[TopicPartition]]:
    """Assign every partition of `partitions_per_topic` to a subscriber, balanced and sticky.

    `topics_of` is each member's subscription, `owned` its settled previously owned partitions,
    and `previous_owners` who owned a partition one generation earlier (preferred when the
    partition has to move).
    """
    return _GeneralAssignment(partitions_per_topic, topics_of, owned, previous_owners).run()


class _GeneralAssignment:
    """The state of one general-path assignment: who holds what, and who may hold what."""

    def __init__(self, partitions_per_topic: Mapping[str, int], topics_of: Mapping[str, Set[str]],
                 owned: Mapping[str, list[TopicPartition]],
                 previous_owners: Mapping[TopicPartition, str]) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.previous_owners = previous_owners
        members = sorted(topics_of, key=java_string_key)
        self.rank = {member: index for index, member in enumerate(members)}
        self.topics_of = {member: [topic for topic in partitions_per_topic if topic in topics_of[member]]
                          for member in members}
        self.subscribers = {topic: [member for member in members if topic in topics_of[member]]
                            for topic in partitions_per_topic}
        self.capacity = {member: sum(partitions_per_topic[topic] for topic in self.topics_of[member])
                         for member in members}
        self.assignment: dict[str, dict[TopicPartition, None]] = {member: {} for member in members}
        self.owner: dict[TopicPartition, str] = {}
        self.revocation_required = False
        for member in members:
            for partition in owned.get(member, ()):
                if partition.topic in topics_of[member]:
                    self.assignment[member][partition] = None
                    self.owner[partition] = member
                else:
                    self.revocation_required = True
        self.active = members
        self.movements = PartitionMovements()

    def run(self) -> dict[str, list[TopicPartition]]:
        """Fill in the unassigned partitions, then balance, newly assigned partitions first."""
        by_contention = sorted(self.partitions_per_topic,
                               key=lambda topic: (len(self.subscribers[topic]), java_string_key(topic)))
        all_partitions = [TopicPartition(topic, partition) for topic in by_contention
                          for partition in range(self.partitions_per_topic[topic])]
        unassigned = [partition for partition in all_partitions if partition not in self.owner]
        for partition in unassigned:
            self._give(partition, self._least_loaded(partition.topic))

        movable_topics = {topic for topic, members in self.subscribers.items() if len(members) > 1}
        movable = [partition for partition in all_partitions if partition.topic in movable_topics]
        newly_assigned = [partition for partition in unassigned if partition.topic in movable_topics]
        self.active = [member for member in self.active if self._can_change(member, movable_topics)]
        if not self.revocation_required:
            self._rebalance(newly_assigned)
        self._rebalance(movable)
        return {member: list(partitions) for member, partitions in self.assignment.items()}

    def _can_change(self, member: str, movable_topics: Set[str]) -> bool:
        """Whether balancing could give `member` more partitions or take some away."""
        return (len(self.assignment[member]) < self.capacity[member]
                or any(partition.topic in movable_topics for partition in self.assignment[member]))

    def _least_loaded(self, topic: str) -> str:
        return min(self.subscribers[topic], key=lambda member: (len(self.assignment[member]), self.rank[member]))

    def _give(self, partition: TopicPartition, member: str) -> None:
        self.assignment[member][partition] = None
        self.owner[partition] = member

    def _rebalance(self, partitions: list[TopicPartition]) -> None:
        """Move partitions of `partitions` until balanced or no move of theirs helps."""
        modified = True
        while modified:
            modified = False
            for partition in partitions:
                if self._is_balanced():
                    break
                load = len(self.assignment[self.owner[partition]])
                previous = self.previous_owners.get(partition)
                if (previous in self.subscribers[partition.topic]
                        and load > len(self.assignment[previous]) + 1):
                    self._move(partition, previous)
                elif any(load > len(self.assignment[other]) + 1 for other in self.subscribers[partition.topic]):
                    self._move(partition, self._least_loaded(partition.topic))
                else:
                    continue
                modified = True

    def _move(self, partition: TopicPartition, new_owner: str) -> None:
        old_owner = self.owner[partition]
        moving = self.movements.partition_to_move(partition, old_owner, new_owner)
        partner = self.movements.swap_partner(moving, new_owner) if moving == partition else None
        if partner is None:
            self._shift(moving, old_owner, new_owner)
            return
        returning, origin = partner  # both go home: the same loads, and no exchange between two members
        self._shift(returning, origin, new_owner)
        self._shift(partition, old_owner, origin)

    def _shift(self, partition: TopicPartition, old_owner: str, new_owner: str) -> None:
        self.movements.record(partition, old_owner, new_owner)
        del self.assignment[old_owner][partition]
        self._give(partition, new_owner)

    def _is_balanced(self) -> bool:
        """Java's isBalanced: no member could take a partition from one holding two or more than it."""
        loads = [len(self.assignment[member]) for member in self.active]
        if not loads or min(loads) >= max(loads) - 1:
            return True
        heaviest_holder = {topic: 0 for topic in self.partitions_per_topic}
        for partition, member in self.owner.items():
            heaviest_holder[partition.topic] = max(heaviest_holder[partition.topic], len(self.assignment[member]))
        for member in self.active:
            load = len(self.assignment[member])
            if load < self.capacity[member] and any(heaviest_holder[topic] > load + 1
                                                    for topic in self.topics_of[member]):
                return False
        return True
