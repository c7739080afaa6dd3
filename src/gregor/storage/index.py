"""Sparse offset and time indexes of a segment, in Kafka's file formats.

Offset index entries are 8 bytes (relative offset int32, file position int32); time index
entries are 12 bytes (timestamp int64, relative offset int32). Entries are kept in memory for
bisecting and appended to the file as they are added; a recovered segment rebuilds both.
"""

from __future__ import annotations

import abc
import bisect
import os
import struct

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class _Index(abc.ABC):
    entry: struct.Struct

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.keys: list[int] = []
        self.values: list[int] = []
        self._pending = bytearray()
        self._load()

    def _load(self) -> None:
        if not os.path.exists(self.path):
            open(self.path, "wb").close()
            return
        with open(self.path, "rb") as handle:
            data = handle.read()
        usable = len(data) - len(data) % self.entry.size
        for first, second in self.entry.iter_unpack(data[:usable]):
            self._add_loaded(first, second)

    @abc.abstractmethod
    def _add_loaded(self, first: int, second: int) -> None:
        """Take one entry read from the file, checking that entries increase."""

    def flush(self) -> None:
        if self._pending:
            with open(self.path, "ab") as handle:
                handle.write(self._pending)
            self._pending.clear()

    def fsync(self) -> None:
        self.flush()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rewrite(self) -> None:
        """Write the in-memory entries as the whole file (after truncation or a rebuild)."""
        self._pending.clear()
        data = b"".join(self._encode(i) for i in range(len(self.keys)))
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, self.path)

    @abc.abstractmethod
    def _encode(self, i: int) -> bytes:
        """Entry i in the file format."""

    def reset(self) -> None:
        self.keys.clear()
        self.values.clear()
        self.rewrite()

    def __len__(self) -> int:
        return len(self.keys)

    def delete(self) -> None:
        self._pending.clear()
        if os.path.exists(self.path):
            os.remove(self.path)

    def rename(self, path: str) -> None:
        self.flush()
        os.replace(self.path, path)
        self.path = path


class OffsetIndex(_Index):
    """Maps offsets to file positions of the batches that contain them (floor lookup)."""

    entry = _OFFSET_ENTRY

    def _add_loaded(self, relative: int, position: int) -> None:
        offset = self.base_offset + relative
        if self.keys and (offset <= self.keys[-1] or position <= self.values[-1]):
            raise ValueError(f"offset index {self.path} is not increasing")
        self.keys.append(offset)
        self.values.append(position)

    def _encode(self, i: int) -> bytes:
        return _OFFSET_ENTRY.pack(self.keys[i] - self.base_offset, self.values[i])

    def append(self, offset: int, position: int) -> None:
        if self.keys and offset <= self.keys[-1]:
            return
        self.keys.append(offset)
        self.values.append(position)
        self._pending += _OFFSET_ENTRY.pack(offset - self.base_offset, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last indexed (offset, position) at or before `offset`, else (base, 0)."""
        i = bisect.bisect_right(self.keys, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.keys[i], self.values[i]

    def truncate_to_position(self, position: int) -> None:
        i = bisect.bisect_left(self.values, position)
        del self.keys[i:], self.values[i:]
        self.rewrite()

    def last_position(self) -> int:
        return self.values[-1] if self.values else 0


class TimeIndex(_Index):
    """Maps the largest timestamp so far to the offset of the batch that carried it."""

    entry = _TIME_ENTRY

    def _add_loaded(self, timestamp: int, relative: int) -> None:
        if self.keys and timestamp < self.keys[-1]:
            raise ValueError(f"time index {self.path} is not increasing")
        self.keys.append(timestamp)
        self.values.append(self.base_offset + relative)

    def _encode(self, i: int) -> bytes:
        return _TIME_ENTRY.pack(self.keys[i], self.values[i] - self.base_offset)

    def append(self, timestamp: int, offset: int) -> None:
        if self.keys and timestamp <= self.keys[-1]:
            return
        self.keys.append(timestamp)
        self.values.append(offset)
        self._pending += _TIME_ENTRY.pack(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> int:
        """An offset from which a scan finds the first record at or after `timestamp`."""
        i = bisect.bisect_left(self.keys, timestamp) - 1
        return self.base_offset if i < 0 else self.values[i]

    def truncate_to_offset(self, offset: int) -> None:
        keep = [i for i, value in enumerate(self.values) if value < offset]
        self.keys[:] = [self.keys[i] for i in keep]
        self.values[:] = [self.values[i] for i in keep]
        self.rewrite()

    def max_timestamp(self) -> int:
        return self.keys[-1] if self.keys else -1
