"""Wake-ups for delayed fetches: who waits for new data on which partition.

Kafka keeps delayed fetches in a purgatory keyed by partition and completes them when an append
moves the partition's high watermark. This is that bookkeeping without the I/O: callers register
a callback and get a handle to cancel it; `notify` runs every callback registered on a partition.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable


class PartitionWaiters:
    def __init__(self) -> None:
        self._waiting: dict[Hashable, dict[int, Callable[[], None]]] = {}
        self._next_handle = 0

    def register(self, partitions: Iterable[Hashable], callback: Callable[[], None]) -> int:
        self._next_handle += 1
        handle = self._next_handle
        for partition in partitions:
            self._waiting.setdefault(partition, {})[handle] = callback
        return handle

    def cancel(self, partitions: Iterable[Hashable], handle: int) -> None:
        for partition in partitions:
            waiters = self._waiting.get(partition)
            if waiters is not None:
                waiters.pop(handle, None)
                if not waiters:
                    del self._waiting[partition]

    def notify(self, partition: Hashable) -> None:
        waiters = self._waiting.get(partition)
        if waiters:
            for callback in list(waiters.values()):
                callback()

    def __len__(self) -> int:
        return len({handle for waiters in self._waiting.values() for handle in waiters})
