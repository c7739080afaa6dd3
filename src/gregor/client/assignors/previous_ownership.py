"""What the members of a sticky group owned before this rebalance, with conflicting claims settled.

Sticky assignors learn previous ownership from the members themselves (user data or the
owned-partitions field), so claims can conflict when a member rejoins with a stale view. As in
Java's AbstractStickyAssignor, the claim from the newer generation wins; two claims from the
same generation cancel out, and the partition is then treated as owned by nobody and as
"claimed by many" (so a cooperative assignor will not hand it out until both have let go).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gregor.client.assignors.topic_partition import TopicPartition, java_string_key

DEFAULT_GENERATION = -1


@dataclass(frozen=True)
class MemberData:
    """A member's claim: the partitions it says it owned and the generation it owned them in."""

    partitions: tuple[TopicPartition, ...] = ()
    generation: int = DEFAULT_GENERATION


@dataclass
class PreviousOwnership:
    """The settled claims: each member's still-valid owned partitions, and the doubly claimed ones."""

    owned: dict[str, list[TopicPartition]]
    claimed_by_many: set[TopicPartition] = field(default_factory=set)


def settle_claims(partitions_per_topic: Mapping[str, int],
                  member_data: Mapping[str, MemberData]) -> PreviousOwnership:
    """Each member's previously owned partitions that still exist, one owner per partition.

    Members are visited in member-id order (Java visits them in hash order), so the result
    does not depend on how the caller built `member_data`.
    """
    settled = PreviousOwnership(owned={member: [] for member in member_data})
    claimant: dict[TopicPartition, str] = {}
    for member in sorted(member_data, key=java_string_key):
        generation = member_data[member].generation
        for partition in dict.fromkeys(member_data[member].partitions):
            if not 0 <= partition.partition < partitions_per_topic.get(partition.topic, 0):
                continue
            other = claimant.get(partition)
            if other is None:
                settled.owned[member].append(partition)
                claimant[partition] = member
                continue
            other_generation = member_data[other].generation
            if generation == other_generation:
                settled.claimed_by_many.add(partition)
                _drop(settled.owned[other], partition)
                claimant[partition] = member
            elif generation > other_generation:
                settled.owned[member].append(partition)
                _drop(settled.owned[other], partition)
                claimant[partition] = member
    return settled


def previous_generation_owners(member_data: Mapping[str, MemberData]) -> dict[TopicPartition, str]:
    """Who owned each partition in the newest generation older than the group's newest one.

    The general sticky algorithm prefers to hand a partition back to this member when it has
    to move anyway (Java's prevAssignment).
    """
    newest = max((data.generation for data in member_data.values()), default=DEFAULT_GENERATION)
    owners: dict[TopicPartition, tuple[str, int]] = {}
    for member in sorted(member_data, key=java_string_key):
        data = member_data[member]
        if data.generation >= newest:
            continue
        for partition in data.partitions:
            known = owners.get(partition)
            if known is None or data.generation > known[1]:
                owners[partition] = member, data.generation
    return {partition: owner for partition, (owner, _) in owners.items()}


def _drop(partitions: list[TopicPartition], partition: TopicPartition) -> None:
    if partition in partitions:
        partitions.remove(partition)
