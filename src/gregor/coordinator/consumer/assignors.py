"""The server-side assignors of `group.consumer.assignors`: `uniform` and `range`.

An assignor maps each member to the partitions of the topics it subscribes to, from the
members' subscriptions (topic ids), their racks, their current target assignment, the partition
count of every subscribed topic and the racks each partition has replicas on. Both are
deterministic: the same input gives the same output, on every coordinator, so a replayed group
computes what the failed coordinator would have.

- `uniform` (Kafka's UniformAssignor, the default): sticky and balanced. A member keeps the
  partitions it has that it still subscribes to; the others go first to eligible members on one
  of the partition's racks that are below their fair share, then to the least loaded eligible
  member; then partitions move from the most loaded members to eligible members with at least two
  fewer, until no such move is left (a move picks a partition off the donor's racks and a taker
  on its racks where it can). With identical subscriptions the counts differ by at most one;
  with different subscriptions it is the same greedy balance (not an optimum), as Kafka's
  heterogeneous case.
- `range` (Kafka's RangeAssignor): per topic, its subscribers in member-id order take
  contiguous ranges, the first `partitions % members` one partition more. Members subscribed to
  the same topics therefore get the same partition numbers of each (co-partitioning). With racks
  (KIP-881's rule), each subscriber first takes, up to its count, the lowest partitions with a
  replica on its rack, and the rest fill up in order. Unlike Kafka's server-side range assignor
  it does not try to keep the previous ranges.

Racks matter only where members send a rack id and partitions have replicas on brokers with
`broker.rack`; without them both assign as before."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from gregor.coordinator.consumer.assignment import Assignment, from_pairs, pairs

TopicPartitionId = tuple[uuid.UUID, int]
PartitionRacks = Mapping[uuid.UUID, Sequence[frozenset[str]]]
"""Per topic, the racks of each partition's replicas by partition index (shorter or absent: none)."""


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows of a member: its subscribed topic ids, current target and rack."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    current: Assignment
    rack: str | None = None


def _on_rack(rack: str | None, racks: PartitionRacks, topic_id: uuid.UUID, partition: int) -> bool:
    """Whether a member on `rack` has a replica of the partition on its rack."""
    if rack is None:
        return False
    of_topic = racks.get(topic_id, ())
    return partition < len(of_topic) and rack in of_topic[partition]


class Assignor(Protocol):
    name: str

    def assign(self, members: Mapping[str, MemberSpec], partitions_per_topic: Mapping[uuid.UUID, int],
               racks: PartitionRacks | None = None) -> dict[str, Assignment]:
        """Each member's target; every member of `members` is in the result."""
        ...


class UniformAssignor:
    name = "uniform"

    def assign(self, members: Mapping[str, MemberSpec], partitions_per_topic: Mapping[uuid.UUID, int],
               racks: PartitionRacks | None = None) -> dict[str, Assignment]:
        racks = racks or {}
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
        assignable = sum(partitions_per_topic[t] for t, candidates in eligible.items() if candidates)
        subscribers = len({m for candidates in eligible.values() for m in candidates})
        share = -(-assignable // subscribers) if subscribers else 0
        on_rack = {m: (lambda t, p, rack=members[m].rack: _on_rack(rack, racks, t, p)) for m in order}
        for topic_id, candidates in eligible.items():  # first, partitions to members on their racks
            for partition in range(partitions_per_topic[topic_id] if candidates else 0):
                local = [m for m in candidates if len(held[m]) < share and on_rack[m](topic_id, partition)]
                if (topic_id, partition) not in owner and local:
                    chosen = min(local, key=lambda m: (len(held[m]), m))
                    owner[(topic_id, partition)] = chosen
                    held[chosen].add((topic_id, partition))
        for topic_id, candidates in eligible.items():
            if not candidates:
                continue
            for partition in range(partitions_per_topic[topic_id]):
                if (topic_id, partition) not in owner:
                    chosen = min(candidates, key=lambda m: (len(held[m]), m))
                    owner[(topic_id, partition)] = chosen
                    held[chosen].add((topic_id, partition))
        _balance(held, eligible, on_rack if racks and any(members[m].rack for m in order) else None)
        return {member_id: from_pairs(held[member_id]) for member_id in order}


def _balance(held: dict[str, set[TopicPartitionId]], eligible: Mapping[uuid.UUID, list[str]],
             on_rack: Mapping[str, Callable[[uuid.UUID, int], bool]] | None) -> None:
    """Move partitions from loaded members to eligible members with at least two fewer, until
    none can move. Every move lowers the sum of squared counts, so this ends. With racks
    (`on_rack`), of the moves a donor has, one that takes a partition off the donor's racks to a
    taker on them comes first, then one off the donor's racks, then one to a taker on them;
    without, the first partition that can move does."""
    def local(member_id: str, topic_id: uuid.UUID, partition: int) -> bool:
        return on_rack is not None and on_rack[member_id](topic_id, partition)

    moved = True
    while moved:
        moved = False
        for donor in sorted(held, key=lambda m: (-len(held[m]), m)):
            count = len(held[donor])
            moves = []
            for topic_id, partition in sorted(held[donor], reverse=True):
                for taker in eligible[topic_id]:
                    if len(held[taker]) <= count - 2:
                        moves.append((local(donor, topic_id, partition), not local(taker, topic_id, partition),
                                      len(held[taker]), taker, -partition, topic_id))
                if moves and on_rack is None:
                    break
            if moves:
                _, _, _, taker, negative, topic_id = min(moves, key=lambda move: move[:5])
                held[donor].discard((topic_id, -negative))
                held[taker].add((topic_id, -negative))
                moved = True
                break


class RangeAssignor:
    name = "range"

    def assign(self, members: Mapping[str, MemberSpec], partitions_per_topic: Mapping[uuid.UUID, int],
               racks: PartitionRacks | None = None) -> dict[str, Assignment]:
        racks = racks or {}
        held: dict[str, list[TopicPartitionId]] = {member_id: [] for member_id in sorted(members)}
        for topic_id in sorted(partitions_per_topic):
            subscribers = [m for m in held if topic_id in members[m].subscribed_topic_ids]
            if not subscribers:
                continue
            count = partitions_per_topic[topic_id]
            quota, extra = divmod(count, len(subscribers))
            wants = {m: quota + (1 if index < extra else 0) for index, m in enumerate(subscribers)}
            free = list(range(count))
            taken: dict[str, list[int]] = {m: [] for m in subscribers}
            for member_id in subscribers:  # first, each member's partitions on its rack
                rack = members[member_id].rack
                local = [p for p in free if _on_rack(rack, racks, topic_id, p)][:wants[member_id]]
                taken[member_id] = local
                free = [p for p in free if p not in local]
            for member_id in subscribers:
                missing = wants[member_id] - len(taken[member_id])
                taken[member_id] += free[:missing]
                free = free[missing:]
            for member_id in subscribers:
                held[member_id].extend((topic_id, partition) for partition in sorted(taken[member_id]))
        return {member_id: from_pairs(partitions) for member_id, partitions in held.items()}


ASSIGNORS: dict[str, Assignor] = {assignor.name: assignor for assignor in (UniformAssignor(), RangeAssignor())}
"""Every assignor this broker has, by the name `group.consumer.assignors` and clients use."""
