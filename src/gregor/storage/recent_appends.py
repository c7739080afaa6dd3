"""The bytes of a leader's latest appends, kept so that a read of the log's tail needs no disk.

Followers fetch from the log end they had, and caught-up consumers from the high watermark: on a
busy leader nearly every read starts at the first offset of a recent append and runs to the log
end. `Log.read` serves such a read from here (the same whole batches, at the same file position,
as a read of the segment would return), without reading batch headers and records back from the
file. The appends are those written to the active segment since its last truncation, back to at
most `MAX_BYTES`; anything else written to the segment (a follower's append, a truncation, a roll)
makes them stale, which `read` checks against the segment's size, so no other path must clear them.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

MAX_BYTES = 1024 * 1024
#: Past MAX_BYTES the oldest appends go until this many bytes are left: one cut every few hundred
#: appends instead of three list shifts of thousands of entries with every append.
TRIMMED_BYTES = MAX_BYTES * 3 // 4


class RecentAppends:
    __slots__ = ("_segment", "_generation", "_bases", "_positions", "_chunks", "_size")

    def __init__(self) -> None:
        self._segment: Any = None
        self._generation = -1
        self._bases: list[int] = []
        self._positions: list[int] = []
        self._chunks: list[bytes] = []
        self._size = 0

    def _clear(self, segment: Any, generation: int) -> None:
        self._segment, self._generation = segment, generation
        self._bases, self._positions, self._chunks, self._size = [], [], [], 0

    def record(self, segment: Any, generation: int, base_offset: int, position: int,
               data: bytes | bytearray | memoryview) -> None:
        """`data`, batches from `base_offset`, was just written at `position` of `segment` (the
        active one), in truncation `generation` of the log. It is copied only when kept (an
        append over `MAX_BYTES` is not: it would evict everything, and copying it costs)."""
        chunks = self._chunks
        if (segment is not self._segment or generation != self._generation
                or (chunks and position != self._positions[-1] + len(chunks[-1]))):
            self._clear(segment, generation)
        if len(data) > MAX_BYTES:
            self._clear(None, -1)
            return
        chunks = self._chunks
        self._bases.append(base_offset)
        self._positions.append(position)
        chunks.append(bytes(data))
        self._size += len(data)
        if self._size > MAX_BYTES:
            self._trim()

    def _trim(self) -> None:
        chunks = self._chunks
        dropped = 0
        while self._size > TRIMMED_BYTES:
            self._size -= len(chunks[dropped])
            dropped += 1
        del chunks[:dropped], self._bases[:dropped], self._positions[:dropped]

    def read(self, segment: Any, generation: int, fetch_offset: int, max_bytes: int) -> tuple[int, bytes] | None:
        """(position, bytes) from the append that began at `fetch_offset` to the end of `segment`,
        when they are all here, nothing else was written since, and they fit in `max_bytes`."""
        chunks = self._chunks
        if (segment is not self._segment or generation != self._generation or not chunks
                or self._positions[-1] + len(chunks[-1]) != segment.size):
            return None
        index = bisect_left(self._bases, fetch_offset)
        if index == len(self._bases) or self._bases[index] != fetch_offset:
            return None
        position = self._positions[index]
        if segment.size - position > max_bytes:
            return None
        return position, chunks[index] if index == len(chunks) - 1 else b"".join(chunks[index:])
