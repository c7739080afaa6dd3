"""Timers as data: a deadline per key, earliest first (the coordinator's purgatory).

Kafka parks delayed heartbeats, joins and syncs in purgatories with their own timer threads;
here each is one key with one deadline, and the broker drives them through `tick(now_ms)`.
Rescheduling a key replaces its deadline; stale heap entries are skipped when popped.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)

_COMPACT_SLACK = 64


class DeadlineQueue(Generic[K]):
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, K]] = []
        self._current: dict[K, tuple[int, int]] = {}
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._current)

    def schedule(self, key: K, deadline_ms: int) -> None:
        entry = (deadline_ms, next(self._sequence))
        self._current[key] = entry
        heapq.heappush(self._heap, (*entry, key))
        if len(self._heap) > 2 * len(self._current) + _COMPACT_SLACK:
            self._heap = [(deadline, seq, k) for k, (deadline, seq) in self._current.items()]
            heapq.heapify(self._heap)

    def cancel(self, key: K) -> None:
        self._current.pop(key, None)

    def deadline(self, key: K) -> int | None:
        entry = self._current.get(key)
        return None if entry is None else entry[0]

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and self._current.get(heap[0][2]) != heap[0][:2]:
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> K | None:
        """Remove and return the key with the earliest deadline at or before `now_ms`, if any.

        Keys due at the same instant come out in the order they were scheduled.
        """
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        del self._current[key]
        return key
