"""Assignments as data: topic id -> partitions, with the set algebra reconciliation needs."""

from __future__ import annotations

import uuid
from typing import Iterable, Iterator, Mapping

Assignment = Mapping[uuid.UUID, frozenset[int]]
"""Partitions per topic id; a topic never maps to an empty set."""

EMPTY: Assignment = {}


def normalized(assignment: Mapping[uuid.UUID, Iterable[int]]) -> dict[uuid.UUID, frozenset[int]]:
    """Drop topics without partitions, freeze the partition sets."""
    return {topic_id: frozenset(partitions) for topic_id, partitions in assignment.items() if partitions}


def pairs(assignment: Assignment) -> Iterator[tuple[uuid.UUID, int]]:
    for topic_id, partitions in assignment.items():
        for partition in partitions:
            yield topic_id, partition


def from_pairs(items: Iterable[tuple[uuid.UUID, int]]) -> dict[uuid.UUID, frozenset[int]]:
    grouped: dict[uuid.UUID, set[int]] = {}
    for topic_id, partition in items:
        grouped.setdefault(topic_id, set()).add(partition)
    return normalized(grouped)


def size(assignment: Assignment) -> int:
    return sum(len(partitions) for partitions in assignment.values())


def contains_all(outer: Assignment, inner: Assignment) -> bool:
    """Whether every partition of `inner` is in `outer`."""
    return all(partitions <= outer.get(topic_id, frozenset()) for topic_id, partitions in inner.items())


def intersects(first: Assignment, second: Assignment) -> bool:
    return any(partitions & second.get(topic_id, frozenset()) for topic_id, partitions in first.items())
