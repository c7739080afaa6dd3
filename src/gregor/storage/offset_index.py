"""Kafka's offset index (`<base>.index`): 8-byte entries of relative offset int32 and position int32.

Each entry names the file position of a batch start and that batch's base offset, one entry per
`index.interval.bytes` of log. A lookup bisects the in-memory arrays for the floor entry; the
segment then scans a few batch headers forward from there.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right

from gregor.storage.index_file import IndexFile

_ENTRY = struct.Struct(">ii")


class OffsetIndex(IndexFile):
    entry_size = _ENTRY.size

    def __init__(self, path: str, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(path, max_index_bytes)
        self.base_offset = base_offset
        self.offsets = array("q")
        self.positions = array("q")

    def load(self, log_size: int) -> bool:
        """Read the file; False (and empty) when it is not a sane index of a log of `log_size` bytes.

        Sane means: whole entries, offsets and positions strictly increasing, offsets above the
        base, positions inside the log.
        """
        self.offsets = array("q")
        self.positions = array("q")
        data = self._read_file()
        if data is None:
            return False
        last_offset = self.base_offset
        last_position = 0
        for relative, position in _ENTRY.iter_unpack(data):
            offset = self.base_offset + relative
            if offset <= last_offset or position <= last_position or position >= log_size:
                self.offsets = array("q")
                self.positions = array("q")
                return False
            self.offsets.append(offset)
            self.positions.append(position)
            last_offset, last_position = offset, position
        return True

    def append(self, offset: int, position: int) -> None:
        self.offsets.append(offset)
        self.positions.append(position)
        self._write(_ENTRY.pack(offset - self.base_offset, position))

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last entry at or below `offset`, else (base offset, 0)."""
        i = bisect_right(self.offsets, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.offsets[i], self.positions[i]

    def lookup_by_position(self, position: int) -> tuple[int, int]:
        """The last entry whose position is at or below `position`, else (base offset, 0)."""
        i = bisect_right(self.positions, position) - 1
        if i < 0:
            return self.base_offset, 0
        return self.offsets[i], self.positions[i]

    def truncate_to(self, offset: int) -> None:
        """Drop the entries at or above `offset`."""
        i = bisect_left(self.offsets, offset)
        if i < len(self.offsets):
            del self.offsets[i:]
            del self.positions[i:]
            self._truncate_file(i)

    def reset(self) -> None:
        self.offsets = array("q")
        self.positions = array("q")
        self._truncate_file(0)

    @property
    def entries(self) -> int:
        return len(self.offsets)

    @property
    def is_full(self) -> bool:
        return len(self.offsets) >= self.max_entries

    @property
    def last_position(self) -> int:
        return self.positions[-1] if self.positions else 0
