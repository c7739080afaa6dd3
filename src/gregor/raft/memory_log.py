"""An in-memory ReplicatedLog (Kafka's MockLog): same contract, no files, for tests and simulation.

Durability is explicit: `flush` marks what is durable and `reopened` returns the log a process
would find after a crash (flushed batches and stored snapshots, no high watermark).
"""

from __future__ import annotations

from gregor.raft.epoch_cache import EpochCache
from gregor.raft.replicated_log import AppendResult, ReplicatedLog, Snapshot
from gregor.records.batch import scan_batches, set_base_offset, set_partition_leader_epoch


class MemoryLog(ReplicatedLog):
    def __init__(self) -> None:
        self._batches: list[tuple[int, int, int, bytes]] = []  # base offset, last offset, epoch, bytes
        self._high_watermark = 0
        self._start_offset = 0
        self._durable_batches = 0
        self._snapshot: Snapshot | None = None
        self._epochs = EpochCache()

    @property
    def start_offset(self) -> int:
        return self._start_offset

    @property
    def end_offset(self) -> int:
        return self._batches[-1][1] + 1 if self._batches else self._start_offset

    @property
    def last_fetched_epoch(self) -> int:
        return self._batches[-1][2] if self._batches else self._base()[0]

    def _base(self) -> tuple[int, int]:
        return (self._snapshot.id.epoch if self._snapshot else 0, self._start_offset)

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> None:
        self._high_watermark = max(self._high_watermark, min(offset, self.end_offset))

    def append_as_leader(self, batches: bytes, epoch: int, now_ms: int) -> AppendResult:
        data = bytearray(batches)
        found, end = scan_batches(data)
        if not found or end != len(data):
            raise ValueError("records are not a whole number of complete record batches")
        first = offset = self.end_offset
        for header, pos in found:
            set_base_offset(data, pos, offset)
            set_partition_leader_epoch(data, pos, epoch)
            last = offset + header.last_offset_delta
            self._batches.append((offset, last, epoch, bytes(data[pos:pos + header.size])))
            self._epochs.assign(epoch, offset)
            offset = last + 1
        return AppendResult(first, offset - 1)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self._epochs.end_offset_for(epoch, self.end_offset, self._base())

    def read(self, start_offset: int, max_offset: int, max_bytes: int) -> bytes:
        out = bytearray()
        for base, last, _, data in self._batches:
            if last < start_offset:
                continue
            if base >= max_offset or (out and len(out) + len(data) > max_bytes):
                break
            out += data
        return bytes(out)

    def truncate_to(self, offset: int) -> None:
        while self._batches and self._batches[-1][1] >= offset:
            self._batches.pop()
        self._durable_batches = min(self._durable_batches, len(self._batches))
        self._epochs.truncate_from_end(self.end_offset)
        self._high_watermark = min(self._high_watermark, self.end_offset)

    def latest_snapshot(self) -> Snapshot | None:
        return self._snapshot

    def store_snapshot(self, snapshot: Snapshot) -> None:
        if snapshot.id.end_offset > self._high_watermark:
            raise ValueError(f"a snapshot at {snapshot.id.end_offset} is above the high watermark "
                             f"{self._high_watermark}")
        if self._snapshot is None or snapshot.id.end_offset > self._snapshot.id.end_offset:
            self._snapshot = snapshot

    def delete_before_snapshot(self) -> int:
        if self._snapshot is not None and self._snapshot.id.end_offset > self._start_offset:
            end = self._snapshot.id.end_offset
            dropped = 0
            while self._batches and self._batches[0][1] < end:
                self._batches.pop(0)
                dropped += 1
            self._durable_batches = max(0, self._durable_batches - dropped)
            self._start_offset = self._batches[0][0] if self._batches else end
            self._epochs.truncate_from_start(self._start_offset)
        return self._start_offset

    def install_snapshot(self, snapshot: Snapshot) -> None:
        self._batches = []
        self._durable_batches = 0
        self._epochs.clear()
        self._snapshot = snapshot
        self._start_offset = snapshot.id.end_offset
        self._high_watermark = snapshot.id.end_offset

    def flush(self, now_ms: int) -> None:
        self._durable_batches = len(self._batches)

    def reopened(self) -> MemoryLog:
        """The log as a restarted process finds it: what was flushed, and the snapshot."""
        log = MemoryLog()
        log._snapshot = self._snapshot
        log._start_offset = self._start_offset
        for base, last, epoch, data in self._batches[:self._durable_batches]:
            log._batches.append((base, last, epoch, data))
            log._epochs.assign(epoch, base)
        log._durable_batches = len(log._batches)
        return log

    def close(self) -> None:
        self._batches = []
