"""Kafka's time index (`<base>.timeindex`): 12-byte entries of timestamp int64 and relative offset int32.

An entry (T, O) says: the largest timestamp in the segment up to the batch ending at offset O is T,
carried by that batch. Timestamps strictly increase from entry to entry, so a bisect finds where
a search for the first record at or after a timestamp must start.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left

from gregor.storage.index_file import IndexFile

_ENTRY = struct.Struct(">qi")


class TimeIndex(IndexFile):
    entry_size = _ENTRY.size

    def __init__(self, path: str, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(path, max_index_bytes)
        self.base_offset = base_offset
        self.timestamps = array("q")
        self.offsets = array("q")

    def load(self) -> bool:
        """Read the file; False (and empty) when timestamps or offsets do not increase."""
        self.timestamps = array("q")
        self.offsets = array("q")
        data = self._read_file()
        if data is None:
            return False
        last_timestamp = -1
        last_offset = self.base_offset
        for timestamp, relative in _ENTRY.iter_unpack(data):
            offset = self.base_offset + relative
            if timestamp <= last_timestamp or offset < last_offset:
                self.timestamps = array("q")
                self.offsets = array("q")
                return False
            self.timestamps.append(timestamp)
            self.offsets.append(offset)
            last_timestamp, last_offset = timestamp, offset
        return True

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (timestamp, offset) unless it does not raise the largest timestamp indexed."""
        if timestamp < 0 or (self.timestamps and timestamp <= self.timestamps[-1]):
            return
        self.timestamps.append(timestamp)
        self.offsets.append(offset)
        self._write(_ENTRY.pack(timestamp, offset - self.base_offset))

    def lookup(self, timestamp: int) -> int:
        """An offset at or before the first record whose timestamp is >= `timestamp`.

        It is the offset of the last entry with a timestamp strictly below the target: every
        record up to that batch is older than the target, so the search may start at that batch.
        """
        i = bisect_left(self.timestamps, timestamp) - 1
        return self.base_offset if i < 0 else self.offsets[i]

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose offset is at or above `offset`."""
        i = bisect_left(self.offsets, offset)
        if i < len(self.offsets):
            del self.timestamps[i:]
            del self.offsets[i:]
            self._truncate_file(i)

    def reset(self) -> None:
        self.timestamps = array("q")
        self.offsets = array("q")
        self._truncate_file(0)

    @property
    def entries(self) -> int:
        return len(self.offsets)

    @property
    def is_full(self) -> bool:
        return len(self.offsets) >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, else (-1, base offset)."""
        if not self.offsets:
            return -1, self.base_offset
        return self.timestamps[-1], self.offsets[-1]
