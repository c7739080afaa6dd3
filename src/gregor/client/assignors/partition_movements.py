"""Bookkeeping of partition moves during one general sticky rebalance.

Balancing may move partitions of a topic from member A to member B and later, as loads shift,
want to move a partition of the same topic from B back to A. Moving back one of the partitions
that came from A instead undoes a move rather than making a second one, which keeps the result
stickier (the role of Java's PartitionMovements). Java looks for the reverse move relative to a
partition's original owner; this looks for it relative to its current owner, so the member that
must shed load is always the one that sheds it, and sends a partition that would otherwise end
up exchanged with another between their first owners back home with that other one
(`swap_partner`).
"""

from __future__ import annotations

from gregor.client.assignors.topic_partition import TopicPartition


class PartitionMovements:
    """Where each moved partition came from, indexed by (topic, from member, to member)."""

    def __init__(self) -> None:
        self._origin: dict[TopicPartition, str] = {}
        self._moved: dict[tuple[str, str, str], dict[TopicPartition, None]] = {}

    def partition_to_move(self, partition: TopicPartition, old_owner: str, new_owner: str) -> TopicPartition:
        """The partition to move from `old_owner` to `new_owner`: one that came from `new_owner`, if any."""
        returning = self._moved.get((partition.topic, new_owner, old_owner))
        return next(iter(returning)) if returning else partition

    def swap_partner(self, partition: TopicPartition, new_owner: str) -> tuple[TopicPartition, str] | None:
        """A partition that came from `new_owner` to the member `partition` came from, with that
        member, or None. Moving `partition` on to `new_owner` would exchange the two between their
        first owners (a swap, which Java's isSticky forbids): sending both home instead moves the
        same load (its current owner sheds one, `new_owner` gains one, the first owner neither)."""
        origin = self._origin.get(partition)
        if origin is None:
            return None
        returning = self._moved.get((partition.topic, new_owner, origin))
        return (next(iter(returning)), origin) if returning else None

    def record(self, partition: TopicPartition, old_owner: str, new_owner: str) -> None:
        """Note that `partition` moved from `old_owner` to `new_owner`."""
        origin = self._origin.pop(partition, old_owner)
        key = (partition.topic, origin, old_owner)
        if key in self._moved:
            del self._moved[key][partition]
            if not self._moved[key]:
                del self._moved[key]
        if origin != new_owner:
            self._origin[partition] = origin
            self._moved.setdefault((partition.topic, origin, new_owner), {})[partition] = None
