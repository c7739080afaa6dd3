"""The log of one partition: a directory `<topic>-<partition>` of segments.

Appending validates each batch of a produce request (CRC, counts, size, timestamps, producer
sequence) with O(1) Python work per batch, numbers it in place and writes it to the active
segment; nothing is written unless every batch of the request is valid. Recovery after an
unclean stop re-validates every batch from the recovery point and truncates at the first bad one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Mapping

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import (
    BatchHeader, scan_batches, set_base_offset, set_log_append_time,
    set_partition_leader_epoch, validate_batch,
)
from gregor.records.errors import RecordsError
from gregor.storage.errors import StorageError
from gregor.storage.producer_state import ProducerStateManager
from gregor.storage.segment import LogSegment

LONG_MAX = 9223372036854775807
MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    retention_ms: int = 604800000
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    max_message_bytes: int = 1048588
    timestamp_before_max_ms: int = LONG_MAX
    timestamp_after_max_ms: int = LONG_MAX
    cleanup_policy: str = "delete"
    min_insync_replicas: int = 1

    @staticmethod
    def from_properties(properties: Mapping[str, str]) -> "LogConfig":
        """Build from Kafka's topic-level keys (already resolved against broker defaults)."""
        def number(key: str, default: int) -> int:
            value = properties.get(key)
            return default if value is None else int(value)

        before = number("message.timestamp.before.max.ms", LONG_MAX)
        difference = number("message.timestamp.difference.max.ms", LONG_MAX)
        return LogConfig(
            segment_bytes=number("segment.bytes", 1073741824),
            segment_ms=number("segment.ms", 604800000),
            retention_ms=number("retention.ms", 604800000),
            retention_bytes=number("retention.bytes", -1),
            index_interval_bytes=number("index.interval.bytes", 4096),
            flush_messages=number("flush.messages", LONG_MAX),
            flush_ms=number("flush.ms", LONG_MAX),
            message_timestamp_type=properties.get("message.timestamp.type", "CreateTime"),
            max_message_bytes=number("max.message.bytes", 1048588),
            timestamp_before_max_ms=min(before, difference),
            timestamp_after_max_ms=min(number("message.timestamp.after.max.ms", LONG_MAX), difference),
            cleanup_policy=properties.get("cleanup.policy", "delete"),
            min_insync_replicas=number("min.insync.replicas", 1),
        )


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    duplicate: bool = False


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    topic, dash, index = name.rpartition("-")
    if not dash or not topic or not index.isdigit():
        return None
    return topic, int(index)


class Log:
    def __init__(self, directory: str, config: LogConfig, now_ms: int, recovery_point: int = 0,
                 log_start_offset: int = 0, clean_shutdown: bool = False) -> None:
        self.directory = directory
        self.config = config
        os.makedirs(directory, exist_ok=True)
        name = os.path.basename(directory)
        parsed = parse_partition_dir(name)
        self.topic, self.partition = parsed if parsed else (name, 0)
        self.segments: list[LogSegment] = []
        self.producer_state = ProducerStateManager(directory)
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        self.high_watermark = 0
        self.unflushed_messages = 0
        self.last_flush_ms = now_ms
        self.truncated_bytes_at_load = 0
        self._load(now_ms, clean_shutdown)

    # -- loading

    def _load(self, now_ms: int, clean_shutdown: bool) -> None:
        for name in os.listdir(self.directory):
            if name.endswith((".tmp", ".cleaned", ".swap")):
                os.remove(os.path.join(self.directory, name))
        bases = sorted(int(n[:-4]) for n in os.listdir(self.directory)
                       if n.endswith(".log") and n[:-4].isdigit())
        damaged = False
        for base in bases:
            segment = LogSegment(self.directory, base, self.config.index_interval_bytes, now_ms)
            if damaged or (self.segments and base < self.segments[-1].next_offset):
                segment.delete()
                continue
            needs_recovery = not clean_shutdown and base >= self._recovery_segment_base(bases)
            if not needs_recovery:
                try:
                    segment.load()
                except (ValueError, RecordsError):
                    needs_recovery = True
            if needs_recovery:
                truncated = segment.recover()
                self.truncated_bytes_at_load += truncated
                damaged = truncated > 0
            if segment.is_empty and self.segments:
                segment.delete()
                continue
            self.segments.append(segment)
        if not self.segments:
            self.segments.append(LogSegment(self.directory, max(self.log_start_offset, 0),
                                            self.config.index_interval_bytes, now_ms))
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._load_producer_state()
        self.high_watermark = self.log_end_offset

    def _recovery_segment_base(self, bases: list[int]) -> int:
        candidates = [b for b in bases if b <= self.recovery_point]
        return candidates[-1] if candidates else 0

    def _load_producer_state(self) -> None:
        snapshot_offset = self.producer_state.load_snapshot(self.log_end_offset)
        start = max(snapshot_offset, 0)
        for segment in self.segments:
            if segment.next_offset <= start:
                continue
            for _, header in segment.batches(segment.offset_index.lookup(start)[1]):
                if header.base_offset >= start:
                    self.producer_state.update(header, header.base_offset)

    # -- offsets

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self.segments)

    # -- appending

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int,
                         now_ms: int) -> AppendInfo:
        data = bytearray(records)
        batches, valid_end = scan_batches(data)
        if not batches or valid_end != len(data):
            raise StorageError(ErrorCode.CORRUPT_MESSAGE,
                               "records are not a whole number of complete record batches")
        config = self.config
        log_append_time = config.message_timestamp_type == "LogAppendTime"
        duplicate = None
        for header, pos in batches:
            if header.size > config.max_message_bytes:
                raise StorageError(ErrorCode.MESSAGE_TOO_LARGE,
                                   f"record batch of {header.size} bytes exceeds max.message.bytes "
                                   f"{config.max_message_bytes}")
            validate_batch(data, pos, header)
            if not log_append_time:
                self._check_timestamp(header, now_ms)
            if header.producer_id >= 0:
                if header.is_transactional:
                    raise StorageError(ErrorCode.INVALID_TXN_STATE, "transactions are not supported yet")
                duplicate = self.producer_state.check(header)
        if duplicate is not None and len(batches) == 1:
            return AppendInfo(duplicate.first_offset, duplicate.last_offset, -1,
                              self.log_start_offset, 0, duplicate=True)
        first_offset = self.log_end_offset
        offset = first_offset
        max_timestamp = -1
        record_count = 0
        for header, pos in batches:
            set_base_offset(data, pos, offset)
            set_partition_leader_epoch(data, pos, leader_epoch)
            if log_append_time:
                set_log_append_time(data, pos, header, now_ms)
            self.producer_state.update(header, offset)
            offset += header.last_offset_delta + 1
            record_count += header.records_count
            max_timestamp = max(max_timestamp, now_ms if log_append_time else header.max_timestamp)
        last_offset = offset - 1
        self._maybe_roll(len(data), now_ms)
        self.active_segment.append(data, first_offset, last_offset, max_timestamp)
        self.unflushed_messages += record_count
        if self.unflushed_messages >= config.flush_messages:
            self.flush(now_ms)
        return AppendInfo(first_offset, last_offset, now_ms if log_append_time else -1,
                          self.log_start_offset, record_count)

    def _check_timestamp(self, header: BatchHeader, now_ms: int) -> None:
        timestamp = header.max_timestamp
        if timestamp < 0:
            return
        if now_ms - timestamp > self.config.timestamp_before_max_ms or \
                timestamp - now_ms > self.config.timestamp_after_max_ms:
            raise StorageError(ErrorCode.INVALID_TIMESTAMP,
                               f"timestamp {timestamp} is out of the range allowed around {now_ms}")

    def _maybe_roll(self, incoming: int, now_ms: int) -> None:
        segment = self.active_segment
        if segment.is_empty:
            return
        if segment.size + incoming > self.config.segment_bytes or \
                now_ms - segment.created_ms >= self.config.segment_ms:
            self.roll(now_ms)

    def roll(self, now_ms: int) -> LogSegment:
        """Start a new active segment at the log end offset."""
        old = self.active_segment
        if old.is_empty:
            return old
        old.flush()
        segment = LogSegment(self.directory, self.log_end_offset, self.config.index_interval_bytes, now_ms)
        self.segments.append(segment)
        self.producer_state.write_snapshot(segment.base_offset)
        return segment

    # -- reading

    def read_bytes(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None,
                   min_one_batch: bool = True) -> bytes:
        """Whole batches from the one containing `fetch_offset`, never past `max_offset`."""
        end = self.log_end_offset
        if fetch_offset < self.log_start_offset or fetch_offset > end:
            raise StorageError(ErrorCode.OFFSET_OUT_OF_RANGE,
                               f"offset {fetch_offset} is outside {self.log_start_offset}..{end}")
        limit = end if max_offset is None else min(max_offset, end)
        if fetch_offset >= limit:
            return b""
        for segment in self._segments_from(fetch_offset):
            data = segment.read(fetch_offset, max_bytes, limit, min_one_batch)
            if data:
                return data
        return b""

    def _segments_from(self, offset: int) -> list[LogSegment]:
        for i, segment in enumerate(self.segments):
            if segment.next_offset > offset:
                return self.segments[i:]
        return []

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        for segment in self.segments:
            if segment.max_timestamp >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, MAX_UNCOMPRESSED_BYTES)
                if found is not None and found[0] >= self.log_start_offset:
                    return found
                if found is not None:
                    return self.log_start_offset, found[1]
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        best = None
        for segment in self.segments:
            for _, header in segment.batches():
                if header.base_offset >= self.log_start_offset or header.last_offset >= self.log_start_offset:
                    if best is None or header.max_timestamp > best[1]:
                        best = (header.last_offset, header.max_timestamp)
        return best

    # -- deleting

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset (DeleteRecords); whole segments below it are removed."""
        if offset > self.high_watermark:
            raise StorageError(ErrorCode.OFFSET_OUT_OF_RANGE,
                               f"cannot delete before {offset}: the high watermark is {self.high_watermark}")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self._delete_segments_below(offset)
        return self.log_start_offset

    def _delete_segments_below(self, offset: int) -> int:
        deleted = 0
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            self.segments.pop(0).delete()
            deleted += 1
        if len(self.segments) == 1 and self.active_segment.next_offset <= offset and \
                not self.active_segment.is_empty:
            self.roll(self.active_segment.created_ms)
            self.segments.pop(0).delete()
            deleted += 1
        return deleted

    def apply_retention(self, now_ms: int) -> int:
        """Delete whole segments past `retention.ms` or beyond `retention.bytes`; returns how many."""
        if "delete" not in self.config.cleanup_policy:
            return 0
        doomed = 0
        retention_ms = self.config.retention_ms
        if retention_ms >= 0:
            for segment in self.segments:
                if segment.is_empty or now_ms - segment.max_timestamp <= retention_ms or segment.max_timestamp < 0:
                    break
                doomed += 1
        retention_bytes = self.config.retention_bytes
        if retention_bytes >= 0:
            excess = self.size_in_bytes() - retention_bytes
            by_size = 0
            for segment in self.segments[:-1]:
                if excess - segment.size < 0:
                    break
                excess -= segment.size
                by_size += 1
            doomed = max(doomed, by_size)
        if doomed == 0:
            return 0
        if doomed >= len(self.segments):
            self.roll(now_ms)
        new_start = self.segments[doomed].base_offset
        for _ in range(doomed):
            self.segments.pop(0).delete()
        self.log_start_offset = max(self.log_start_offset, new_start)
        return doomed

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or after `offset` (replication's divergence repair)."""
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
        self.active_segment.truncate_to(offset)
        self.producer_state.truncate()
        self._load_producer_state()
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)

    # -- durability and lifecycle

    def flush(self, now_ms: int) -> None:
        for segment in self.segments:
            if segment.next_offset > self.recovery_point:
                segment.fsync()
        self.recovery_point = self.log_end_offset
        self.unflushed_messages = 0
        self.last_flush_ms = now_ms

    def flush_if_due(self, now_ms: int) -> None:
        if self.unflushed_messages and now_ms - self.last_flush_ms >= self.config.flush_ms:
            self.flush(now_ms)

    def checkpoint_flush(self) -> None:
        """Make appended data visible to index files without fsync (page cache is enough)."""
        for segment in self.segments:
            segment.flush()

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def close(self) -> None:
        self.producer_state.write_snapshot(self.log_end_offset)
        for segment in self.segments:
            segment.close()

    def delete(self) -> None:
        for segment in self.segments:
            segment.close()
        self.segments = []
        shutil.rmtree(self.directory, ignore_errors=True)
