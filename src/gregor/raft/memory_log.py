"""An in-memory ReplicatedLog (Kafka's MockLog): same contract, no files, for tests and simulation."""

from __future__ import annotations

from gregor.raft.replicated_log import AppendResult, ReplicatedLog
from gregor.records.batch import scan_batches, set_base_offset, set_partition_leader_epoch


class MemoryLog(ReplicatedLog):
    def __init__(self) -> None:
        self._batches: list[tuple[int, int, int, bytes]] = []  # base offset, last offset, epoch, bytes
        self._high_watermark = 0

    @property
    def start_offset(self) -> int:
        return self._batches[0][0] if self._batches else 0

    @property
    def end_offset(self) -> int:
        return self._batches[-1][1] + 1 if self._batches else 0

    @property
    def last_fetched_epoch(self) -> int:
        return self._batches[-1][2] if self._batches else 0

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
            offset = last + 1
        return AppendResult(first, offset - 1)

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
        self._high_watermark = min(self._high_watermark, self.end_offset)

    def flush(self, now_ms: int) -> None:
        """Nothing to make durable: memory is all there is."""

    def close(self) -> None:
        self._batches = []
