"""One cleaning of one log: the part of Kafka's Cleaner that runs on a cleaner thread.

A `CleaningTask` is made by `LogCleaner.begin` on the thread that owns the log. It copies what it
needs from the log then (segment sizes, timestamps, index sizes, producers' last offsets) and
duplicates each segment's file descriptor, so `run`, on a worker thread, reads only its own
descriptors and never the log's mutable state. `run` then:

1. maps key → latest offset over the dirty section [first dirty, first uncleanable), stopping
   early when the offset map is full; the cleaned section ends after the last batch mapped;
2. groups the segments from the log start to that end so that each group's data and indexes
   fit one segment (segment.bytes, segment.index.bytes, offsets within 2^31 of the base);
3. copies each group into `<base>.log.cleaned` (+ indexes) and fsyncs it. A record stays when no
   later offset holds its key or it lies past the mapped section; records without a key go (as
   Kafka). Tombstones follow KIP-534, Kafka's rule for v2 batches: the first cleaning that keeps
   one stamps its batch with a delete horizon (now + delete.retention.ms), and the first
   cleaning at or after that horizon drops it. Batches of aborted transactions go (and are not
   mapped); transaction markers stay while their transaction has batches, then go after
   delete.retention.ms (`gregor.storage.cleaned_txns`); other control batches stay. The batch
   carrying an active producer's last sequence stays (emptied if need be), and so does the batch
   ending right before the first uncleanable offset, as Kafka keeps them.

The swap itself is `LogCleaner.finish`, back on the log's thread.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Iterator, NamedTuple

from gregor.records.batch import BATCH_HEADER_SIZE, BatchHeader, parse_header, verify_crc
from gregor.records.record import Record, decode_records, txn_marker_of
from gregor.storage.cleaned_batch import delete_horizon, empty_batch, rebuilt_batch
from gregor.storage.cleaned_txns import CleanedTransactions
from gregor.storage.log import MAX_UNCOMPRESSED_BYTES, Log
from gregor.storage.offset_map import OffsetMap
from gregor.storage.segment import (
    CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, MAX_RELATIVE_OFFSET, MIN_BATCH_LENGTH, TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX, LogSegment, segment_file_prefix,
)
from gregor.storage.txn_index import AbortedTxn


@dataclass(frozen=True)
class CleanerConfig:
    """Kafka's broker keys log.cleaner.dedupe.buffer.size (here: for one running task; Kafka
    divides it among log.cleaner.threads), log.cleaner.io.buffer.load.factor and
    log.cleaner.io.buffer.size."""

    dedupe_buffer_size: int = 134217728
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 524288


@dataclass
class CleanerStats:
    """What one cleaning did, for the broker's log line and metrics."""

    topic: str
    partition: int
    first_dirty_offset: int
    end_offset: int = -1
    dirty_ratio: float = 0.0
    map_bytes_read: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_written: int = 0
    segments_read: int = 0
    segments_written: int = 0

    @property
    def records_removed(self) -> int:
        return self.records_read - self.records_written

    def summary(self) -> str:
        return (f"cleaned {self.topic}-{self.partition} offsets [{self.first_dirty_offset}, {self.end_offset}) "
                f"(dirty ratio {self.dirty_ratio:.2f}): {self.segments_read} segment(s) into "
                f"{self.segments_written}, {self.bytes_read} bytes into {self.bytes_written}, "
                f"{self.records_read} records into {self.records_written} ({self.records_removed} removed); "
                f"{self.map_bytes_read} bytes mapped")


class CleaningAborted(Exception):
    """The task was cancelled (`LogCleaner.abort`): its log is being deleted or closed."""


class CleanerError(Exception):
    """The cleaner cannot clean this log (a corrupt segment, an offset map too small)."""


class _Source(NamedTuple):
    """A segment as it was when the task began, read through its own descriptor."""

    segment: LogSegment
    fd: int
    base_offset: int
    end_offset: int
    size: int
    last_modified_ms: int
    index_bytes: int
    time_index_bytes: int


def _source(segment: LogSegment, following: LogSegment) -> _Source:
    """`end_offset` bounds the segment's offsets by the next segment's base, as Kafka's grouping does."""
    return _Source(segment, os.dup(segment.fd), segment.base_offset, following.base_offset, segment.size,
                   segment.last_modified_ms, segment.offset_index.entries * segment.offset_index.entry_size,
                   segment.time_index.entries * segment.time_index.entry_size)


class CleaningTask:
    """Everything one cleaning needs; `run` (any thread) does the work, `LogCleaner.finish` the swap."""

    def __init__(self, log: Log, first_dirty: int, first_uncleanable: int, dirty_ratio: float,
                 config: CleanerConfig, now_ms: int) -> None:
        self.log = log
        self.log_config = log.config
        self.directory = log.directory
        self.first_dirty = first_dirty
        self.first_uncleanable = first_uncleanable
        self.config = config
        self.now_ms = now_ms
        self.truncations = log.truncations
        segments = log.segments
        self.sources = [_source(segments[i], segments[i + 1]) for i in range(len(segments) - 1)
                        if segments[i].base_offset < first_uncleanable]
        self.producer_last_offsets = {pid: entry.batches[-1].last_offset
                                      for pid, entry in log.producer_state.producers.items() if entry.batches}
        self._txns = CleanedTransactions(log.aborted_transactions(log.log_start_offset, first_uncleanable))
        self.stats = CleanerStats(log.topic, log.partition, first_dirty, dirty_ratio=dirty_ratio)
        self.end_offset = first_dirty
        self.replacements: list[tuple[list[LogSegment], LogSegment]] = []
        self._kept_aborted: list[AbortedTxn] = []
        self.completed = False
        self.failed = False
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def close_sources(self) -> None:
        for source in self.sources:
            os.close(source.fd)
        self.sources = []

    def discard(self) -> None:
        """Delete the `.cleaned` files written so far."""
        for _, segment in self.replacements:
            segment.destroy()
        self.replacements = []

    # -- the worker side

    def run(self) -> None:
        """Map the dirty section, then write the cleaned groups; safe on a worker thread."""
        try:
            offset_map = OffsetMap(self.config.dedupe_buffer_size, self.config.dedupe_buffer_load_factor)
            full = self._build_offset_map(offset_map)
            if offset_map.latest_offset >= self.first_dirty:
                self.end_offset = offset_map.latest_offset + 1
                for group in self._groups():
                    self._clean_group(group, offset_map)
            elif full:
                raise CleanerError(f"the offset map holds fewer keys ({offset_map.capacity}) than the batch at "
                                   f"{self.first_dirty} of {self.directory}: raise log.cleaner.dedupe.buffer.size")
            else:
                self.end_offset = self.first_uncleanable
            self.stats.end_offset = self.end_offset
        except BaseException:
            self.failed = True
            raise
        self.completed = True

    def _batches(self, source: _Source) -> Iterator[tuple[BatchHeader, memoryview]]:
        """Each batch of the source, CRC-checked, read in chunks of at least io.buffer.size."""
        position = 0
        chunk = memoryview(b"")
        chunk_start = 0
        while position < source.size:
            if self._cancelled.is_set():
                raise CleaningAborted(f"cleaning of {self.directory} was aborted")
            relative = position - chunk_start
            if relative + BATCH_HEADER_SIZE > len(chunk) \
                    or relative + self._size_at(source, chunk, relative) > len(chunk):
                chunk = self._read(source, position, self.config.io_buffer_size)
                chunk_start, relative = position, 0
                size = self._size_at(source, chunk, 0)
                if size > len(chunk):
                    chunk = self._read(source, position, size)
            header = parse_header(chunk, relative)
            if relative + header.size > len(chunk) or not verify_crc(chunk, relative, header):
                raise CleanerError(f"segment {source.base_offset} of {self.directory} has a torn or corrupt "
                                   f"batch at position {position}")
            yield header, chunk[relative:relative + header.size]
            position += header.size

    def _read(self, source: _Source, position: int, size: int) -> memoryview:
        return memoryview(os.pread(source.fd, min(size, source.size - position), position))

    def _size_at(self, source: _Source, chunk: memoryview, relative: int) -> int:
        """The size of the batch starting at `relative`, checked to be one."""
        if relative + BATCH_HEADER_SIZE > len(chunk):
            raise CleanerError(f"segment {source.base_offset} of {self.directory} ends inside a batch header")
        header = parse_header(chunk, relative)
        if header.batch_length < MIN_BATCH_LENGTH:
            raise CleanerError(f"segment {source.base_offset} of {self.directory} has a batch length of "
                               f"{header.batch_length}")
        return header.size

    def _records(self, header: BatchHeader, data: memoryview) -> list[Record]:
        return decode_records(data, 0, header, MAX_UNCOMPRESSED_BYTES)

    def _build_offset_map(self, offset_map: OffsetMap) -> bool:
        """Kafka's buildOffsetMap: stop at the first record that would overfill the map; whether it did.

        The section is clean already when no batch lies in it (only batches below the first
        dirty offset in its first segment): nothing is mapped and `latest_offset` stays -1.
        """
        for source in self.sources:
            if source.end_offset <= self.first_dirty:
                continue
            for header, data in self._batches(source):
                self.stats.map_bytes_read += header.size
                if header.last_offset < self.first_dirty:
                    continue
                if not header.is_control and not self._txns.is_aborted(header):
                    for record in self._records(header, data):
                        if record.key is not None and record.offset >= self.first_dirty:
                            if offset_map.is_full:
                                return True
                            offset_map.put(record.key, record.offset)
                offset_map.latest_offset = header.last_offset
        return False

    def _groups(self) -> list[list[_Source]]:
        """Kafka's groupSegmentsBySize over the segments below the end of the cleaned section."""
        remaining = [s for s in self.sources if s.base_offset < self.end_offset]
        groups = []
        max_bytes = self.log_config.segment_bytes
        max_index = self.log_config.segment_index_bytes
        while remaining:
            group = [remaining.pop(0)]
            size, index, time_index = group[0].size, group[0].index_bytes, group[0].time_index_bytes
            while remaining:
                head = remaining[0]
                if size + head.size > max_bytes or index + head.index_bytes > max_index \
                        or time_index + head.time_index_bytes > max_index \
                        or (head.size and head.end_offset - 1 - group[0].base_offset > MAX_RELATIVE_OFFSET):
                    break
                group.append(remaining.pop(0))
                size, index, time_index = size + head.size, index + head.index_bytes, time_index + head.time_index_bytes
            groups.append(group)
        return groups

    def _new_segment(self, base_offset: int) -> LogSegment:
        """An empty `.cleaned` segment (replacing any file an aborted task left at that base)."""
        prefix = segment_file_prefix(self.directory, base_offset)
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            stale = prefix + suffix + CLEANED_SUFFIX
            if os.path.exists(stale):
                os.remove(stale)
        return LogSegment(self.directory, base_offset, self.log_config.index_interval_bytes,
                          self.log_config.segment_index_bytes, self.now_ms, CLEANED_SUFFIX)

    def _clean_group(self, group: list[_Source], offset_map: OffsetMap) -> None:
        """Write one group into one fsynced `.cleaned` segment that keeps the group's last modification
        time, as Kafka does: retention.ms falls back on it for segments without timestamps."""
        cleaned = self._new_segment(group[0].base_offset)
        self.replacements.append(([source.segment for source in group], cleaned))
        for source in group:
            self._clean_into(source, cleaned, offset_map)
        for txn in self._kept_aborted:
            cleaned.txn_index.append(txn)
        self._kept_aborted = []
        cleaned.seal()
        modified_ns = group[-1].last_modified_ms * 1_000_000
        os.utime(cleaned.path, ns=(modified_ns, modified_ns))
        cleaned.last_modified_ms = group[-1].last_modified_ms
        cleaned.fsync()
        self.stats.segments_read += len(group)
        self.stats.segments_written += 1
        self.stats.bytes_written += cleaned.size

    def _clean_into(self, source: _Source, cleaned: LogSegment, offset_map: OffsetMap) -> None:
        """Copy what survives of one source segment, buffering about io.buffer.size per write."""
        pending = bytearray()
        described: list[tuple[int, int, int, int]] = []
        for header, data in self._batches(source):
            self.stats.bytes_read += header.size
            self.stats.records_read += header.records_count
            output, kept = self._filter(header, data, offset_map)
            self.stats.records_written += kept
            if output is None:
                continue
            described.append((header.base_offset, header.last_offset, len(output), parse_header(output).max_timestamp))
            pending += output
            if len(pending) >= self.config.io_buffer_size:
                cleaned.append(pending, described, self.now_ms)
                pending, described = bytearray(), []
        if pending:
            cleaned.append(pending, described, self.now_ms)

    def _filter(self, header: BatchHeader, data: memoryview, offset_map: OffsetMap
                ) -> tuple[bytes | memoryview | None, int]:
        """What is written for one batch, and how many of its records survive."""
        if header.is_control:
            return self._filter_control(header, data)
        if self._txns.on_data_batch(header):
            return self._dropped(header)
        records = self._records(header, data)
        latest = offset_map.latest_offset
        horizon = delete_horizon(header)
        retain_deletes = horizon is None or self.now_ms < horizon
        kept = [record for record in records
                if record.offset > latest or (
                    record.key is not None and record.offset >= offset_map.get(record.key)
                    and (record.value is not None or retain_deletes))]
        if horizon is None and any(record.value is None for record in kept):
            horizon = self.now_ms + self.log_config.delete_retention_ms
        elif len(kept) == len(records):
            return data, len(kept)
        if kept:
            return rebuilt_batch(header, kept, horizon), len(kept)
        return self._dropped(header)

    def _dropped(self, header: BatchHeader) -> tuple[bytes | None, int]:
        """A batch without records left: kept empty when Kafka keeps it, else gone."""
        if (header.producer_id >= 0 and self.producer_last_offsets.get(header.producer_id) == header.last_offset) \
                or header.last_offset + 1 == self.first_uncleanable:
            return empty_batch(header), 0
        return None, 0

    def _filter_control(self, header: BatchHeader, data: memoryview) -> tuple[bytes | memoryview | None, int]:
        """A transaction marker stays while its transaction has batches, then goes after its
        delete horizon (stamped by the first cleaning that could remove it); others stay."""
        records = self._records(header, data)
        marker = txn_marker_of(records[0]) if len(records) == 1 and header.producer_id >= 0 else None
        if marker is None:
            return data, header.records_count
        removable, kept_abort = self._txns.on_marker(header, marker[0])
        if kept_abort is not None:
            self._kept_aborted.append(kept_abort)
        if not removable:
            return data, header.records_count
        horizon = delete_horizon(header)
        if horizon is None:
            return rebuilt_batch(header, records, self.now_ms + self.log_config.delete_retention_ms), len(records)
        if self.now_ms < horizon or header.last_offset + 1 == self.first_uncleanable:
            return data, header.records_count  # a control batch is never emptied: kept whole where one must stay
        return None, 0
