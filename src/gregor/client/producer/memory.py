"""`buffer.memory`: how many bytes of unsent batches the producer may hold.

Memory is reserved per batch (its `batch.size`, or the record's size when that is larger), as
the Java client's BufferPool hands out batch-sized buffers, so the check costs nothing on the
appends that fit in an open batch. A sender that runs out waits up to `max.block.ms`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from gregor.client.errors import ClientErrorCode, KafkaTimeoutError


class NoRoom(Exception):
    """Raised by a BufferMemory that does not wait (the asyncio producer's): `size` bytes are not
    free now. The producer attaches the record it was appending (`record`) and awaits room."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size
        self.record: Any = None


class BufferMemory:
    def __init__(self, total_bytes: int) -> None:
        self.total_bytes = total_bytes
        self._available = total_bytes
        self._condition = threading.Condition()

    @property
    def available(self) -> int:
        return self._available

    def full(self, size: int) -> KafkaTimeoutError:
        """The error of a send that waited max.block.ms for `size` bytes in vain."""
        return KafkaTimeoutError(
            ClientErrorCode._QUEUE_FULL,
            f"buffer.memory ({self.total_bytes} bytes) is full and {size} bytes did not free up "
            f"within max.block.ms; the broker is slower than the sends or unreachable")

    def reserve(self, size: int, deadline: float) -> None:
        """Take `size` bytes, waiting until `deadline` (time.monotonic) for batches to be sent."""
        with self._condition:
            while self._available < size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self.full(size)
                self._condition.wait(remaining)
            self._available -= size

    def release(self, size: int) -> None:
        with self._condition:
            self._available += size
            self._condition.notify_all()
