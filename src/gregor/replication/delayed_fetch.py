"""Fetches waiting for records: Kafka's DelayedFetch purgatory, sans-IO.

A fetch that found too little to send is parked under the partitions it reads, with the deadline
of its max wait and, optionally, the condition that makes it due (`EnoughBytes` for a consumer's
min_bytes). Progress on a partition (records appended, for a follower; the high watermark moved,
for a consumer) is `check`ed: it completes the fetches parked under that partition whose
condition now holds (all of those without one) and leaves the others parked. A change of the
partition itself (its leadership changed, it was deleted) `complete`s all of them, and `expire`
those whose deadline has passed; the host then reads each completed fetch once more and answers
it. Nothing here scans what an event cannot complete: a partition's fetches are found by key,
deadlines by a heap.

Parking happens in the same step as the read that found too little, so no event can fall between
the two (the host must not yield in between).
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Callable, Generic, Hashable, Iterable, TypeVar

from gregor.protocol.exceptions import KafkaError
from gregor.replication.partition import READ_UNCOMMITTED, Partition
from gregor.storage.segment import OffsetPosition

T = TypeVar("T")
Condition = Callable[[], bool]


@dataclass
class _Parked(Generic[T]):
    handle: int
    keys: tuple[Hashable, ...]
    deadline_ms: int
    token: T
    ready: Condition | None
    done: bool = field(default=False)


class DelayedFetches(Generic[T]):
    def __init__(self) -> None:
        self._by_key: dict[Hashable, dict[int, _Parked[T]]] = {}
        self._deadlines: list[tuple[int, int, _Parked[T]]] = []
        self._handles = itertools.count(1)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def park(self, keys: Iterable[Hashable], deadline_ms: int, token: T, ready: Condition | None = None) -> None:
        """Park a fetch; `ready`, when given, tells `check` whether it is due an answer."""
        handle = next(self._handles)
        parked = _Parked(handle, tuple(dict.fromkeys(keys)), deadline_ms, token, ready)
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

    def check(self, key: Hashable) -> list[T]:
        """The fetches parked under `key` that progress on it makes due: those whose condition
        now holds, and those without one (Kafka's checkAndComplete); the others stay parked."""
        waiting = self._by_key.get(key)
        if not waiting:
            return []
        due = [parked for parked in waiting.values() if not parked.done and (parked.ready is None or parked.ready())]
        return [self._finish(parked) for parked in due]

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


@dataclass(frozen=True, slots=True)
class _Read:
    partition: Partition
    start: OffsetPosition
    leader_epoch: int
    max_bytes: int
    isolation_level: int


class EnoughBytes:
    """A consumer fetch's condition (Kafka's DelayedFetch.tryComplete): due once its partitions
    hold at least `min_bytes` it could read, each counted up to its partition max bytes from log
    positions (no record is read while it waits), or at once when one of them can no longer be
    counted (its leader changed, its log changed under the fetch offset), so that the read
    reports what happened."""

    def __init__(self, min_bytes: int) -> None:
        self._min_bytes = min_bytes
        self._reads: list[_Read] = []

    def add(self, partition: Partition, fetch_offset: int, max_bytes: int,
            isolation_level: int = READ_UNCOMMITTED) -> None:
        """A partition the fetch reads from `fetch_offset`, as it stands when the fetch parks."""
        self._reads.append(_Read(partition, partition.read_position(fetch_offset), partition.leader_epoch,
                                 max_bytes, isolation_level))

    def __call__(self) -> bool:
        """Whether the fetch is due. Asked while the event that moved a high watermark is still
        being handled (a produce's append), so a failure to count (an unreadable segment) makes
        the fetch due, for its read to report, instead of failing that event."""
        total = 0
        for read in self._reads:
            try:
                available = read.partition.bytes_available(read.start, read.leader_epoch, read.isolation_level)
            except (KafkaError, OSError):
                return True
            if available is None:
                return True
            total += min(available, read.max_bytes)
            if total >= self._min_bytes:
                return True
        return False
