"""Wake-ups for delayed fetches: who waits for new data on which partition.

Kafka keeps delayed fetches in a purgatory keyed by partition and completes them when an append
moves the partition's high watermark. This is that bookkeeping without the I/O: callers register
a callback and get a handle to cancel it; `notify` runs every callback registered on a partition.

A fetch decides to wait in one step and starts waiting in a later one (the broker runs it as a
task), so it takes `marks` when it reads and registers `since` them: a partition notified in
between runs the callback at once instead of being missed.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, Mapping


class PartitionWaiters:
    def __init__(self) -> None:
        self._waiting: dict[Hashable, dict[int, Callable[[], None]]] = {}
        self._notified: dict[Hashable, int] = {}
        self._next_handle = 0

    def marks(self, partitions: Iterable[Hashable]) -> dict[Hashable, int]:
        """How often each partition has been notified so far (for `register(since=...)`)."""
        return {partition: self._notified.get(partition, 0) for partition in partitions}

    def register(self, partitions: Iterable[Hashable], callback: Callable[[], None],
                 since: Mapping[Hashable, int] | None = None) -> int:
        partitions = list(partitions)
        self._next_handle += 1
        handle = self._next_handle
        for partition in partitions:
            self._waiting.setdefault(partition, {})[handle] = callback
        if since is not None and any(self._notified.get(p, 0) != since.get(p, 0) for p in partitions):
            callback()
        return handle

    def cancel(self, partitions: Iterable[Hashable], handle: int) -> None:
        for partition in partitions:
            waiters = self._waiting.get(partition)
            if waiters is not None:
                waiters.pop(handle, None)
                if not waiters:
                    del self._waiting[partition]

    def notify(self, partition: Hashable) -> None:
        self._notified[partition] = self._notified.get(partition, 0) + 1
        waiters = self._waiting.get(partition)
        if waiters:
            for callback in list(waiters.values()):
                callback()

    def __len__(self) -> int:
        return len({handle for waiters in self._waiting.values() for handle in waiters})
