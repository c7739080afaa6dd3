"""One log segment: `<base offset>.log` with its `.index` and `.timeindex`.

Appends take batches that the log has already validated and numbered; reads return byte ranges
of whole batches, found with the offset index and a short scan of batch headers.
"""

from __future__ import annotations

import os
import struct

from gregor.records.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, BatchHeader, parse_header, verify_crc
from gregor.records.errors import RecordsError
from gregor.records.record import decode_records
from gregor.storage.index import OffsetIndex, TimeIndex

_PREFIX = struct.Struct(">qi")
_SCAN_CHUNK = 1 << 20


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class LogSegment:
    def __init__(self, directory: str, base_offset: int, index_interval_bytes: int, created_ms: int) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        name = os.path.join(directory, segment_name(base_offset))
        self.path = name + ".log"
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.offset_index = OffsetIndex(name + ".index", base_offset)
        self.time_index = TimeIndex(name + ".timeindex", base_offset)
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.created_ms = created_ms
        self._bytes_since_index = 0

    # -- appending

    def append(self, data: bytes | bytearray | memoryview, first_offset: int, last_offset: int,
               max_timestamp: int) -> None:
        position = self.size
        if self._bytes_since_index >= self.index_interval_bytes or position == 0:
            self.offset_index.append(first_offset, position)
            self.time_index.append(max(max_timestamp, self.max_timestamp), last_offset)
            self._bytes_since_index = 0
        written = os.pwrite(self.fd, data, position)
        if written != len(data):
            raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
        self.size += written
        self._bytes_since_index += written
        self.next_offset = last_offset + 1
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp

    # -- reading

    def _header_at(self, position: int) -> BatchHeader | None:
        data = os.pread(self.fd, BATCH_HEADER_SIZE, position)
        if len(data) < BATCH_HEADER_SIZE:
            return None
        return parse_header(data)

    def find_position(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= `offset`."""
        _, position = self.offset_index.lookup(offset)
        while position < self.size:
            header = self._header_at(position)
            if header is None:
                return None
            if header.last_offset >= offset:
                return position, header
            position += header.size
        return None

    def read(self, offset: int, max_bytes: int, max_offset: int, min_one_batch: bool) -> bytes:
        """Whole batches from the one containing `offset`, below `max_offset`, within `max_bytes`."""
        found = self.find_position(offset)
        if found is None:
            return b""
        start, header = found
        position = start
        end = start
        while position < self.size:
            if header is None:
                header = self._header_at(position)
                if header is None:
                    break
            if header.base_offset >= max_offset:
                break
            if end + header.size - start > max_bytes and not (min_one_batch and end == start):
                break
            end = position + header.size
            position = end
            header = None
        return os.pread(self.fd, end - start, start) if end > start else b""

    def batches(self, start_position: int = 0):
        """(position, header) of every batch from `start_position`, reading headers only."""
        position = start_position
        while position < self.size:
            header = self._header_at(position)
            if header is None:
                return
            yield position, header
            position += header.size

    def find_offset_by_timestamp(self, timestamp: int, max_uncompressed: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with a timestamp >= `timestamp`."""
        found = self.find_position(self.time_index.lookup(timestamp))
        if found is None:
            return None
        for position, header in self.batches(found[0]):
            if header.max_timestamp >= timestamp:
                data = os.pread(self.fd, header.size, position)
                for record in decode_records(data, 0, header, max_uncompressed):
                    if record.timestamp >= timestamp:
                        return record.offset, record.timestamp
        return None

    # -- recovery and truncation

    def load(self) -> None:
        """Resume a cleanly closed segment: trust the indexes, scan only past the last entry."""
        if self.offset_index.values and self.offset_index.values[-1] >= self.size:
            raise ValueError(f"offset index of {self.path} points past the log")
        self.max_timestamp = self.time_index.max_timestamp()
        start = self.offset_index.last_position()
        self.next_offset = self.base_offset
        for position, header in self.batches(start):
            self.next_offset = header.last_offset + 1
            self.max_timestamp = max(self.max_timestamp, header.max_timestamp)
            self._bytes_since_index = position + header.size - start
        if self.size and self.next_offset == self.base_offset:
            raise ValueError(f"segment {self.path} holds no readable batch")

    def recover(self) -> int:
        """Validate every batch; truncate at the first torn or corrupt one; rebuild the indexes.

        Returns the number of bytes truncated.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self._bytes_since_index = 0
        valid_end = 0
        position = 0
        while position + LOG_OVERHEAD <= self.size:
            prefix = os.pread(self.fd, LOG_OVERHEAD, position)
            _, batch_length = _PREFIX.unpack(prefix)
            end = position + LOG_OVERHEAD + batch_length
            if batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD or end > self.size:
                break
            data = os.pread(self.fd, end - position, position)
            try:
                header = parse_header(data)
            except RecordsError:
                break
            if not verify_crc(data, 0, header) or header.base_offset < self.next_offset:
                break
            if self._bytes_since_index >= self.index_interval_bytes or position == 0:
                self.offset_index.append(header.base_offset, position)
                self.time_index.append(max(header.max_timestamp, self.max_timestamp), header.last_offset)
                self._bytes_since_index = 0
            self._bytes_since_index += header.size
            self.next_offset = header.last_offset + 1
            self.max_timestamp = max(self.max_timestamp, header.max_timestamp)
            position = valid_end = end
        truncated = self.size - valid_end
        if truncated:
            os.ftruncate(self.fd, valid_end)
            self.size = valid_end
        self.offset_index.rewrite()
        self.time_index.rewrite()
        return truncated

    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or after `offset` (used by replication)."""
        found = self.find_position(offset)
        if found is None:
            return
        position, header = found
        cut = position if header.base_offset >= offset else position + header.size
        os.ftruncate(self.fd, cut)
        self.size = cut
        self.offset_index.truncate_to_position(cut)
        self.time_index.truncate_to_offset(offset)
        self.recover()

    # -- lifecycle

    def flush(self) -> None:
        self.offset_index.flush()
        self.time_index.flush()

    def fsync(self) -> None:
        os.fsync(self.fd)
        self.offset_index.fsync()
        self.time_index.fsync()

    def close(self) -> None:
        self.flush()
        os.close(self.fd)

    def delete(self) -> None:
        os.close(self.fd)
        os.remove(self.path)
        self.offset_index.delete()
        self.time_index.delete()

    @property
    def is_empty(self) -> bool:
        return self.size == 0
