"""One log segment: `<20-digit base offset>.log` with its `.index`, `.timeindex` and `.txnindex`.

The segment appends batches that the log has already validated and numbered, adding an index
entry every `index.interval.bytes`. Reads locate the batch holding an offset with the offset index
plus a forward walk over batch headers (read in small chunks, never decoded past the header) and
return a file region of whole batches. Recovery re-reads every batch, checks its CRC and rebuilds
both offset and time indexes, truncating at the first torn or corrupt batch. The aborted-transaction
index is the log's to rebuild (it replays the producer state over recovered segments: an entry
needs the transactions open before the segment).
"""

from __future__ import annotations

import io
import os
from bisect import bisect_left, bisect_right
from typing import Iterator, NamedTuple, Sequence

from gregor.records.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, BatchHeader, parse_header, verify_crc
from gregor.records.errors import RecordsError
from gregor.records.record import decode_records
from gregor.storage import disk_full
from gregor.storage.file_slice import FileSlice
from gregor.storage.offset_index import OffsetIndex
from gregor.storage.time_index import TimeIndex
from gregor.storage.txn_index import TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
MAX_RELATIVE_OFFSET = 0x7FFFFFFF
_HEADER_CHUNK = 8192
_RECOVERY_CHUNK = 4 << 20


class OffsetPosition(NamedTuple):
    """Where the batch holding `offset` starts: its segment and byte position (Kafka's
    LogOffsetMetadata). Positions let a waiting fetch count bytes without reading them."""

    offset: int
    segment: LogSegment
    position: int


def segment_file_prefix(directory: str, base_offset: int) -> str:
    return os.path.join(directory, f"{base_offset:020d}")


class LogSegment:
    """A segment file and its indexes; `size` and `next_offset` describe what it holds.

    `suffix` names the files of a segment being swapped in by the cleaner (`.cleaned`, `.swap`:
    see `gregor.storage.swap`); live segments have none.
    """

    def __init__(self, directory: str, base_offset: int, index_interval_bytes: int,
                 max_index_bytes: int, created_ms: int, suffix: str = "") -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.suffix = suffix
        prefix = segment_file_prefix(directory, base_offset)
        self.path = prefix + LOG_SUFFIX + suffix
        self.file = io.FileIO(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644), "r+")
        self.fd = self.file.fileno()
        self.size = os.fstat(self.fd).st_size
        self.offset_index = OffsetIndex(prefix + INDEX_SUFFIX + suffix, base_offset, max_index_bytes)
        self.time_index = TimeIndex(prefix + TIME_INDEX_SUFFIX + suffix, base_offset, max_index_bytes)
        self.txn_index = TransactionIndex(prefix + TXN_INDEX_SUFFIX + suffix)
        if self.size == 0:
            self.offset_index.create()
            self.time_index.create()
        self.created_ms = created_ms
        self.last_modified_ms = created_ms
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.rolling_base_timestamp = -1
        self._bytes_since_index = 0
        # Every batch appended since the offset-index entry before the last one (base offsets,
        # last offsets, positions; the batches run to the end of the file): a read near the log
        # end, which is what followers and caught-up consumers ask for, finds its batch here
        # instead of reading the headers after a sparse index entry, also just after an entry
        # was added (the batches before it stay until the next one). `_tail_interval` is where
        # the batches after the last entry begin in the lists.
        self._tail_offsets: list[int] = []
        self._tail_last_offsets: list[int] = []
        self._tail_positions: list[int] = []
        self._tail_interval = 0
        self.deleted_at_ms: int | None = None

    # -- appending

    def append(self, data: bytes | bytearray | memoryview, batches: Sequence[tuple[int, int, int, int]],
               now_ms: int) -> None:
        """Write `data`, the batches described by (base offset, last offset, size, max timestamp)."""
        view = memoryview(data)
        written = 0
        while written < len(view):
            allowed = disk_full.room(self.path, len(view) - written)
            written += os.pwrite(self.fd, view[written:written + allowed], self.size + written)
        position = self.size
        for base_offset, last_offset, size, max_timestamp in batches:
            self._track(position, base_offset, last_offset, size, max_timestamp)
            position += size
        self.size = position
        self.last_modified_ms = now_ms

    def _track(self, position: int, base_offset: int, last_offset: int, size: int, max_timestamp: int) -> None:
        """Account for one batch at `position`, as Kafka's LogSegment.append does per batch."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if position == 0:
            self.rolling_base_timestamp = max_timestamp
        if self._bytes_since_index > self.index_interval_bytes:
            self.offset_index.append(base_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
            self._next_tail_interval()
        self._tail_offsets.append(base_offset)
        self._tail_last_offsets.append(last_offset)
        self._tail_positions.append(position)
        self._bytes_since_index += size
        self.next_offset = last_offset + 1

    def can_hold(self, incoming_bytes: int, last_offset: int, segment_bytes: int) -> bool:
        """Whether an append of `incoming_bytes` up to `last_offset` fits without a roll."""
        return (self.size + incoming_bytes <= segment_bytes
                and not self.offset_index.is_full and not self.time_index.is_full
                and last_offset - self.base_offset <= MAX_RELATIVE_OFFSET)

    def time_waited_for_roll(self, now_ms: int, incoming_max_timestamp: int) -> int:
        """Kafka's rule: by record timestamps when the segment has one, else by the broker clock."""
        if self.rolling_base_timestamp >= 0 and incoming_max_timestamp >= 0:
            return incoming_max_timestamp - self.rolling_base_timestamp
        return now_ms - self.created_ms

    # -- reading

    def batches(self, start_position: int = 0, end_position: int | None = None
                ) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each complete batch from `start_position`, reading headers only."""
        end = self.size if end_position is None else min(end_position, self.size)
        position = start_position
        chunk = b""
        chunk_start = position
        while position + BATCH_HEADER_SIZE <= end:
            relative = position - chunk_start
            if relative + BATCH_HEADER_SIZE > len(chunk):
                chunk = os.pread(self.fd, _HEADER_CHUNK, position)
                chunk_start, relative = position, 0
                if len(chunk) < BATCH_HEADER_SIZE:
                    return
            header = parse_header(chunk, relative)
            if header.batch_length < MIN_BATCH_LENGTH or position + header.size > end:
                return
            yield position, header
            position += header.size

    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= `offset`."""
        tail = self._tail_offsets
        if tail and offset >= tail[0]:
            located = self._locate_in_tail(offset)
            return None if located is None else next(self.batches(located[0]), None)
        _, position = self.offset_index.lookup(offset)
        for position, header in self.batches(position):
            if header.last_offset >= offset:
                return position, header
        return None

    def locate(self, offset: int) -> tuple[int, int] | None:
        """(position, size) of the first batch whose last offset is >= `offset`, as `find`, but
        without reading the file when the batch is in the tail."""
        tail = self._tail_offsets
        if tail and offset >= tail[0]:
            return self._locate_in_tail(offset)
        found = self.find(offset)
        return None if found is None else (found[0], found[1].size)

    def _locate_in_tail(self, offset: int) -> tuple[int, int] | None:
        """`locate` for an offset at or after the tail's first batch, from memory."""
        tail = self._tail_offsets
        index = bisect_right(tail, offset) - 1
        if self._tail_last_offsets[index] < offset:  # past that batch (a gap, or the end): the next
            index += 1
            if index == len(tail):
                return None
        positions = self._tail_positions
        end = positions[index + 1] if index + 1 < len(positions) else self.size
        return positions[index], end - positions[index]

    def base_offset_at(self, position: int) -> int | None:
        """The base offset of the batch that starts at `position` (None past the last one)."""
        positions = self._tail_positions
        if positions and position >= positions[0]:
            index = bisect_left(positions, position)
            return self._tail_offsets[index] if index < len(positions) and positions[index] == position else None
        following = next(self.batches(position), None)
        return None if following is None else following[1].base_offset

    def position_bound(self, max_offset: int) -> int:
        """The position of the first batch reaching `max_offset` (reads must stop before it)."""
        if max_offset >= self.next_offset:
            return self.size
        found = self.locate(max_offset)
        return self.size if found is None else found[0]

    def read(self, start_offset: int, max_bytes: int, max_position: int, min_one_batch: bool
             ) -> FileSlice | None:
        """Whole batches from the one holding `start_offset`, ending at or before `max_position`.

        At most `max_bytes`, except that `min_one_batch` lets a first batch larger than that through.
        """
        found = self.locate(start_offset)
        if found is None:
            return None
        start, first_size = found
        limit = min(self.size, max_position)
        if start >= limit:
            return None
        target = start + max_bytes
        if target >= limit:
            end = limit
        else:
            end = max(self.offset_index.lookup_by_position(target)[1], start)
            for position, batch in self.batches(end, limit):
                if position + batch.size > target:
                    break
                end = position + batch.size
            if end == start and min_one_batch:
                end = start + first_size
        if end <= start:
            return None
        return FileSlice(self.file, start, end - start)

    def read_batch(self, position: int, header: BatchHeader) -> bytes:
        return os.pread(self.fd, header.size, position)

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int,
                                 max_uncompressed_bytes: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `starting_offset` with a timestamp >= `timestamp`.

        Only the batch whose max timestamp first reaches the target is decoded.
        """
        found = self.find(max(self.time_index.lookup(timestamp), starting_offset))
        if found is None:
            return None
        for position, header in self.batches(found[0]):
            if header.max_timestamp >= timestamp:
                for record in decode_records(self.read_batch(position, header), 0, header, max_uncompressed_bytes):
                    if record.timestamp >= timestamp and record.offset >= starting_offset:
                        return record.offset, record.timestamp
        return None

    def max_timestamp_record(self, max_uncompressed_bytes: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the segment's largest timestamp."""
        if self.max_timestamp < 0:
            return None
        found = self.find(self.offset_of_max_timestamp)
        if found is None:
            return None
        position, header = found
        for record in decode_records(self.read_batch(position, header), 0, header, max_uncompressed_bytes):
            if record.timestamp == self.max_timestamp:
                return record.offset, record.timestamp
        return header.last_offset, header.max_timestamp

    @property
    def largest_timestamp(self) -> int:
        """What retention.ms compares: the largest record timestamp, else the last write time."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    # -- loading, recovery and truncation

    def load(self) -> bool:
        """Resume a segment whose indexes are trusted; False when they fail a sanity check.

        The check is Kafka's: both files present, whole entries, increasing, inside the log, and
        the last offset entry pointing at a batch that starts with that offset. Batches after the last entry are
        scanned for the next offset and the largest timestamp.
        """
        self.last_modified_ms = int(os.fstat(self.fd).st_mtime * 1000)
        if self.size and not (os.path.exists(self.offset_index.path) and os.path.exists(self.time_index.path)):
            return False
        if not self.offset_index.load(self.size) or not self.time_index.load() or not self.txn_index.load():
            return False
        if self.offset_index.entries:
            try:
                found = next(self.batches(self.offset_index.last_position), None)
            except RecordsError:
                return False
            if found is None or found[1].base_offset != self.offset_index.offsets[-1]:
                return False
        if not self._scan_tail():
            return False
        return self.time_index.last_entry[1] < max(self.next_offset, self.base_offset + 1)

    def _scan_tail(self) -> bool:
        """Recompute the in-memory state from the indexes plus the batches after the last entry."""
        self._forget_tail()
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry
        self.rolling_base_timestamp = -1
        self.next_offset = self.base_offset
        start = self.offset_index.last_position
        end = start
        try:
            first = next(self.batches(0), None)
            if first is not None:
                self.rolling_base_timestamp = first[1].max_timestamp
            for position, header in self.batches(start):
                if header.max_timestamp > self.max_timestamp:
                    self.max_timestamp = header.max_timestamp
                    self.offset_of_max_timestamp = header.last_offset
                self.next_offset = header.last_offset + 1
                self._tail_offsets.append(header.base_offset)
                self._tail_last_offsets.append(header.last_offset)
                self._tail_positions.append(position)
                end = position + header.size
        except RecordsError:
            return False
        self._bytes_since_index = end - start
        return end == self.size

    def recover(self) -> int:
        """Validate every batch from the start and rebuild both indexes; returns bytes truncated.

        Stops at the first batch that is torn, fails its CRC, or does not follow the previous
        batch's offsets; everything from there on is cut off.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self._forget_tail()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self.rolling_base_timestamp = -1
        self._bytes_since_index = 0
        position = 0
        chunk = b""
        chunk_start = 0
        while position + LOG_OVERHEAD <= self.size:
            relative = position - chunk_start
            if relative + BATCH_HEADER_SIZE > len(chunk):
                chunk = os.pread(self.fd, _RECOVERY_CHUNK, position)
                chunk_start, relative = position, 0
            if len(chunk) - relative < BATCH_HEADER_SIZE:
                break
            try:
                header = parse_header(chunk, relative)
            except RecordsError:
                break
            if header.batch_length < MIN_BATCH_LENGTH or position + header.size > self.size:
                break
            if relative + header.size > len(chunk):
                chunk = os.pread(self.fd, max(_RECOVERY_CHUNK, header.size), position)
                chunk_start, relative = position, 0
            if (not verify_crc(chunk, relative, header) or header.last_offset_delta < 0
                    or header.base_offset < self.next_offset
                    or header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET):
                break
            self._track(position, header.base_offset, header.last_offset, header.size, header.max_timestamp)
            position += header.size
        truncated = self.size - position
        if truncated:
            os.ftruncate(self.fd, position)
            self.size = position
        return truncated

    def _forget_tail(self) -> None:
        """Drop the tail's positions (reads walk from the index again until the next appends)."""
        self._tail_offsets.clear()
        self._tail_last_offsets.clear()
        self._tail_positions.clear()
        self._tail_interval = 0

    def _next_tail_interval(self) -> None:
        """An index entry was added: keep the batches since the one before it, drop the older."""
        dropped = self._tail_interval
        del self._tail_offsets[:dropped], self._tail_last_offsets[:dropped], self._tail_positions[:dropped]
        self._tail_interval = len(self._tail_offsets)

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding `offset` and every later one; returns bytes removed.

        As in Kafka, a batch is never split: truncating into the middle of a batch removes it.
        """
        found = self.find(offset)
        if found is None:
            return 0
        position, header = found
        self.offset_index.truncate_to(header.base_offset)
        self.time_index.truncate_to(header.base_offset)
        self.txn_index.truncate_to(header.base_offset)
        removed = self.size - position
        os.ftruncate(self.fd, position)
        self.size = position
        self._scan_tail()
        return removed

    # -- lifecycle

    def seal(self) -> None:
        """The segment stops being active: index its largest timestamp and release index descriptors."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.offset_index.close()
        self.time_index.close()

    def fsync(self) -> None:
        os.fsync(self.fd)
        self.offset_index.fsync()
        self.time_index.fsync()
        self.txn_index.fsync()

    def close(self) -> None:
        self.seal()
        self.file.close()

    def mark_deleted(self, now_ms: int) -> None:
        """Rename the files to `*.deleted`; they stay open for readers until `destroy`."""
        self.seal()
        os.replace(self.path, self.path + DELETED_SUFFIX)
        self.path += DELETED_SUFFIX
        self.offset_index.rename(self.offset_index.path + DELETED_SUFFIX)
        self.time_index.rename(self.time_index.path + DELETED_SUFFIX)
        self.txn_index.rename(self.txn_index.path + DELETED_SUFFIX)
        self.deleted_at_ms = now_ms

    def rename_suffix(self, suffix: str) -> None:
        """Rename the log and both index files from the current suffix to `suffix`; the file stays open."""
        def renamed(path: str) -> str:
            return path[:len(path) - len(self.suffix)] + suffix

        for index in (self.offset_index, self.time_index, self.txn_index):
            index.rename(renamed(index.path))
        path = renamed(self.path)
        os.replace(self.path, path)
        self.path = path
        self.suffix = suffix

    def destroy(self) -> None:
        """Close and remove the files for good."""
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.file.close()
        if os.path.exists(self.path):
            os.remove(self.path)

    @property
    def is_empty(self) -> bool:
        return self.size == 0
