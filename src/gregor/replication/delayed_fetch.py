"""Fetches waiting for records: Kafka's DelayedFetch purgatory, sans-IO.

A fetch that found nothing to send is parked under the partitions it reads, with the deadline of
its max wait. An event on a partition (records appended, for a follower; the high watermark
moved, for a consumer; its leadership changed or it was deleted, for both) completes exactly the
fetches parked under that partition, and `expire` those whose deadline has passed; the host then
reads each completed fetch once more and answers it. Nothing here scans what an event cannot
complete: a partition's fetches are found by key, deadlines by a heap.

Parking happens in the same step as the read that found nothing, so no event can fall between
the two (the host must not yield in between).
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Generic, Hashable, Iterable, TypeVar

T = TypeVar("T")


@dataclass
class _Parked(Generic[T]):
    handle: int
    keys: tuple[Hashable, ...]
    deadline_ms: int
    token: T
    done: bool = field(default=False)


class DelayedFetches(Generic[T]):
    def __init__(self) -> None:
        self._by_key: dict[Hashable, dict[int, _Parked[T]]] = {}
        self._deadlines: list[tuple[int, int, _Parked[T]]] = []
        self._handles = itertools.count(1)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def park(self, keys: Iterable[Hashable], deadline_ms: int, token: T) -> None:
        handle = next(self._handles)
        parked = _Parked(handle, tuple(dict.fromkeys(keys)), deadline_ms, token)
        for key in parked.keys:
            self._by_key.setdefault(key, {})[handle] = parked
        heapq.heappush(self._deadlines, (deadline_ms, handle, parked))
        self._count += 1

    def complete(self, key: Hashable) -> list[T]:
        """The fetches parked under `key`, now due an answer (each once, whatever else it waits on)."""
        waiting = self._by_key.pop(key, None)
        if not waiting:
            return []
        return [self._finish(parked) for parked in waiting.values() if not parked.done]

    def expire(self, now_ms: int) -> list[T]:
        """The fetches whose max wait has run out by `now_ms`."""
        expired = []
        while self._deadlines and (self._deadlines[0][2].done or self._deadlines[0][0] <= now_ms):
            _, _, parked = heapq.heappop(self._deadlines)
            if not parked.done:
                expired.append(self._finish(parked))
        return expired

    def next_deadline(self) -> int | None:
        """When `expire` next has something to answer."""
        while self._deadlines and self._deadlines[0][2].done:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def _finish(self, parked: _Parked[T]) -> T:
        parked.done = True
        self._count -= 1
        for key in parked.keys:
            waiting = self._by_key.get(key)
            if waiting is not None:
                waiting.pop(parked.handle, None)
                if not waiting:
                    del self._by_key[key]
        return parked.token
