"""The log a raft voter replicates (Kafka's ReplicatedLog): a narrow interface over batches.

Raft needs little from storage: append whole v2 batches stamped with the leader epoch, read
whole batches back, know the end offset and the last epoch, keep a high watermark, truncate
after a divergence, answer where an epoch ends, and keep snapshots of the state machine so
the prefix they cover can be deleted. `MemoryLog` implements it for tests and simulation,
`StorageLog` on a `gregor.storage.Log`; `tests/unit/raft` runs one conformance suite against
both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple

from gregor.records.batch import scan_batches


class AppendResult(NamedTuple):
    first_offset: int
    last_offset: int


class SnapshotId(NamedTuple):
    """A snapshot covers every offset below `end_offset`; `epoch` is the epoch of the last one."""

    end_offset: int
    epoch: int


class Snapshot(NamedTuple):
    id: SnapshotId
    data: bytes


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

    def append_as_follower(self, batches: bytes, now_ms: int) -> AppendResult:
        """Append batches fetched from the leader, keeping their offsets and epochs.

        ValueError when they do not start at the end offset (a stale or reordered response).
        """
        found, end = scan_batches(batches)
        if not found or end != len(batches):
            raise ValueError("records are not a whole number of complete record batches")
        if found[0][0].base_offset != self.end_offset:
            raise ValueError(f"fetched batches start at {found[0][0].base_offset}, the log ends at {self.end_offset}")
        first = self.end_offset
        for header, pos in found:
            self.append_as_leader(batches[pos:pos + header.size], header.partition_leader_epoch, now_ms)
        return AppendResult(first, self.end_offset - 1)

    @abstractmethod
    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(the largest epoch <= `epoch` in the log, the offset where it ends); below every epoch,
        (the snapshot's epoch or 0, the start offset)."""

    @abstractmethod
    def latest_snapshot(self) -> Snapshot | None:
        """The newest stored snapshot."""

    @abstractmethod
    def store_snapshot(self, snapshot: Snapshot) -> None:
        """Keep `snapshot` durably (its end offset at or below the high watermark)."""

    @abstractmethod
    def delete_before_snapshot(self) -> int:
        """Drop the log prefix the latest snapshot covers; returns the new start offset."""

    @abstractmethod
    def install_snapshot(self, snapshot: Snapshot) -> None:
        """Replace the whole log by `snapshot` (a follower too far behind the leader's log start)."""

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
