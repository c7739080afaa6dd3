"""The sticky assignors' fast path, for groups whose members all subscribe to the same topics.

Every member ends with `minimum` or `minimum + 1` partitions (`minimum = total // members`,
and exactly `total % members` members get the extra one), keeping as many of its previously
owned partitions as that allows. Partitions it must give up are recorded so that a cooperative
assignor can hold them back until their owner has revoked them (Java's ConstrainedAssignmentBuilder).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Set
from dataclasses import dataclass

from gregor.client.assignors.topic_partition import TopicPartition, java_string_key


@dataclass
class ConstrainedAssignment:
    """The balanced assignment, and each partition given to a member other than the one that owned it."""

    assignment: dict[str, list[TopicPartition]]
    transferring: dict[TopicPartition, str]


def assign_constrained(partitions_per_topic: Mapping[str, int],
                       owned: Mapping[str, list[TopicPartition]],
                       claimed_by_many: Set[TopicPartition]) -> ConstrainedAssignment:
    """Balance all partitions of `partitions_per_topic` over the members of `owned`, stickily.

    `owned` maps every member to its settled previously owned partitions; `claimed_by_many`
    are partitions several members claimed in the same generation, which nobody keeps.
    """
    members = sorted(owned, key=java_string_key)
    total = sum(partitions_per_topic.values())
    minimum, members_with_extra = divmod(total, len(members))
    maximum = minimum + (1 if members_with_extra else 0)
    result = ConstrainedAssignment({member: [] for member in members}, {})
    released: dict[TopicPartition, str] = {}
    below_minimum: list[str] = []
    at_minimum: list[str] = []
    extra_given = 0

    for member in members:
        kept = sorted((partition for partition in owned[member] if partition not in claimed_by_many),
                      key=lambda tp: (tp.partition, java_string_key(tp.topic)))
        if len(kept) < minimum:
            below_minimum.append(member)
        elif len(kept) >= maximum and extra_given < members_with_extra:
            extra_given += 1
            if extra_given == members_with_extra:
                at_minimum.clear()
            released.update((partition, member) for partition in kept[maximum:])
            kept = kept[:maximum]
        else:
            released.update((partition, member) for partition in kept[minimum:])
            kept = kept[:minimum]
            if extra_given < members_with_extra:
                at_minimum.append(member)
        result.assignment[member].extend(kept)

    taken = {partition for partitions in result.assignment.values() for partition in partitions}
    unassigned = [TopicPartition(topic, partition)
                  for topic in sorted(partitions_per_topic, key=java_string_key)
                  for partition in range(partitions_per_topic[topic])
                  if TopicPartition(topic, partition) not in taken]
    below_minimum.sort(key=java_string_key)
    waiting_for_extra = deque(sorted(at_minimum, key=java_string_key))

    turn = 0
    for partition in unassigned:
        if below_minimum:
            turn %= len(below_minimum)
            member = below_minimum[turn]
            if len(result.assignment[member]) + 1 == minimum:
                waiting_for_extra.append(below_minimum.pop(turn))
            else:
                turn += 1
        else:
            member = waiting_for_extra.popleft()
        result.assignment[member].append(partition)
        if released.get(partition, member) != member or partition in claimed_by_many:
            result.transferring[partition] = member
    return result
