"""`buffer.memory` for the asyncio producer: reserving never blocks the event loop.

The sync producer's `BufferMemory` waits on a condition until the sender frees room; here the
sender runs on the same loop as the caller, so blocking would wait forever. `reserve` takes the
room when it is there and otherwise raises `NoRoom`; the producer then awaits `wait_for` (woken
by `release`) and appends again, up to `max.block.ms`.
"""

from __future__ import annotations

import asyncio
import time

from gregor.client.producer.memory import BufferMemory, NoRoom

__all__ = ["AsyncBufferMemory", "NoRoom"]


class AsyncBufferMemory(BufferMemory):
    def __init__(self, total_bytes: int) -> None:
        super().__init__(total_bytes)
        self._waiters: list[asyncio.Future[None]] = []

    def reserve(self, size: int, deadline: float) -> None:
        if self._available < size:
            raise NoRoom(size)
        self._available -= size

    def release(self, size: int) -> None:
        self._available += size
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_for(self, size: int, deadline: float) -> None:
        """Until `size` bytes are free; KafkaTimeoutError(_QUEUE_FULL) at `deadline` (time.monotonic)."""
        while self._available < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.full(size)
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout(remaining):
                    await waiter
            except TimeoutError:
                pass
