"""The log a raft voter replicates (Kafka's ReplicatedLog): a narrow interface over batches.

Raft needs little from storage: append whole v2 batches stamped with the leader epoch, read
whole batches back, know the end offset and the last epoch, keep a high watermark, truncate
after a divergence. `MemoryLog` implements it for tests and simulation, `StorageLog` on a
`gregor.storage.Log`; `tests/unit/raft` runs one conformance suite against both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple


class AppendResult(NamedTuple):
    first_offset: int
    last_offset: int


class ReplicatedLog(ABC):
    @property
    @abstractmethod
    def start_offset(self) -> int:
        """The first offset still in the log."""

    @property
    @abstractmethod
    def end_offset(self) -> int:
        """The offset the next appended record gets (log end offset)."""

    @property
    @abstractmethod
    def last_fetched_epoch(self) -> int:
        """The leader epoch of the last batch, or 0 for an empty log."""

    @property
    @abstractmethod
    def high_watermark(self) -> int:
        """Offsets below this are committed."""

    @abstractmethod
    def update_high_watermark(self, offset: int) -> None:
        """Raise the high watermark (never above the end offset, never backwards)."""

    @abstractmethod
    def append_as_leader(self, batches: bytes, epoch: int, now_ms: int) -> AppendResult:
        """Assign offsets from the end offset and stamp `epoch` on each v2 batch of `batches`."""

    @abstractmethod
    def read(self, start_offset: int, max_offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one containing `start_offset`, none starting at `max_offset` or
        later; at least one batch when there is one, even beyond `max_bytes`."""

    @abstractmethod
    def truncate_to(self, offset: int) -> None:
        """Drop every record at or after `offset` (a follower repairing a divergence)."""

    @abstractmethod
    def flush(self, now_ms: int) -> None:
        """Make everything appended durable."""

    @abstractmethod
    def close(self) -> None:
        """Release files; the log is unusable afterwards."""
