"""The server-side assignors of `group.consumer.assignors`: `uniform` and `range`.

An assignor maps each member to the partitions of the topics it subscribes to, from the
members' subscriptions (topic ids), their current target assignment and the partition count of
every subscribed topic. Both are deterministic: the same input gives the same output, on every
coordinator, so a replayed group computes what the failed coordinator would have.

- `uniform` (Kafka's UniformAssignor, the default): sticky and balanced. A member keeps the
  partitions it has that it still subscribes to; the others go to the least loaded eligible
  member; then partitions move from the most loaded members to eligible members with at least two
  fewer, until no such move is left. With identical subscriptions the counts differ by at most
  one; with different subscriptions it is the same greedy balance (not an optimum), as Kafka's
  heterogeneous case.
- `range` (Kafka's RangeAssignor): per topic, its subscribers in member-id order take
  contiguous ranges, the first `partitions % members` one partition more. Members subscribed to
  the same topics therefore get the same partition numbers of each (co-partitioning). Unlike
  Kafka's server-side range assignor it does not try to keep the previous ranges.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Mapping, Protocol

from gregor.coordinator.consumer.assignment import Assignment, from_pairs, pairs

TopicPartitionId = tuple[uuid.UUID, int]


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows of a member: its subscribed topic ids and current target."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    current: Assignment


class Assignor(Protocol):
    name: str

    def assign(self, members: Mapping[str, MemberSpec],
               partitions_per_topic: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
        """Each member's target; every member of `members` is in the result."""
        ...


class UniformAssignor:
    name = "uniform"

    def assign(self, members: Mapping[str, MemberSpec],
               partitions_per_topic: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
        order = sorted(members)
        held: dict[str, set[TopicPartitionId]] = {member_id: set() for member_id in order}
        owner: dict[TopicPartitionId, str] = {}
        eligible = {topic_id: [m for m in order if topic_id in members[m].subscribed_topic_ids]
                    for topic_id in sorted(partitions_per_topic)}
        for member_id in order:
            spec = members[member_id]
            for topic_id, partition in sorted(pairs(spec.current)):
                if (topic_id in spec.subscribed_topic_ids and partition < partitions_per_topic.get(topic_id, 0)
                        and (topic_id, partition) not in owner):
                    owner[(topic_id, partition)] = member_id
                    held[member_id].add((topic_id, partition))
        for topic_id, candidates in eligible.items():
            if not candidates:
                continue
            for partition in range(partitions_per_topic[topic_id]):
                if (topic_id, partition) not in owner:
                    chosen = min(candidates, key=lambda m: (len(held[m]), m))
                    owner[(topic_id, partition)] = chosen
                    held[chosen].add((topic_id, partition))
        _balance(held, eligible)
        return {member_id: from_pairs(held[member_id]) for member_id in order}


def _balance(held: dict[str, set[TopicPartitionId]], eligible: Mapping[uuid.UUID, list[str]]) -> None:
    """Move partitions from loaded members to eligible members with at least two fewer, until
    none can move. Every move lowers the sum of squared counts, so this ends."""
    moved = True
    while moved:
        moved = False
        for donor in sorted(held, key=lambda m: (-len(held[m]), m)):
            count = len(held[donor])
            for topic_id, partition in sorted(held[donor], reverse=True):
                takers = [m for m in eligible[topic_id] if len(held[m]) <= count - 2]
                if takers:
                    taker = min(takers, key=lambda m: (len(held[m]), m))
                    held[donor].discard((topic_id, partition))
                    held[taker].add((topic_id, partition))
                    moved = True
                    break
            if moved:
                break


class RangeAssignor:
    name = "range"

    def assign(self, members: Mapping[str, MemberSpec],
               partitions_per_topic: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
        held: dict[str, list[TopicPartitionId]] = {member_id: [] for member_id in sorted(members)}
        for topic_id in sorted(partitions_per_topic):
            subscribers = [m for m in held if topic_id in members[m].subscribed_topic_ids]
            if not subscribers:
                continue
            count = partitions_per_topic[topic_id]
            quota, extra = divmod(count, len(subscribers))
            start = 0
            for index, member_id in enumerate(subscribers):
                length = quota + (1 if index < extra else 0)
                held[member_id].extend((topic_id, partition) for partition in range(start, start + length))
                start += length
        return {member_id: from_pairs(partitions) for member_id, partitions in held.items()}


ASSIGNORS: dict[str, Assignor] = {assignor.name: assignor for assignor in (UniformAssignor(), RangeAssignor())}
"""Every assignor this broker has, by the name `group.consumer.assignors` and clients use."""
