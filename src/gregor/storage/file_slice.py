"""Regions of segment files that a fetch returns, for `os.sendfile` or `os.pread` by the caller.

A slice holds the segment's file object, not a bare descriptor number: once the file is closed,
`fileno()` raises ValueError instead of handing out a number the kernel may have reused for
another file. Segments removed by retention or DeleteRecords stay open for `file.delete.delay.ms`
(Kafka's grace period), so a slice taken before a deletion can still be sent.
"""

from __future__ import annotations

import io
import os
from typing import NamedTuple

from gregor.storage.txn_index import AbortedTxn


class FileSlice(NamedTuple):
    """`length` bytes of whole record batches at `position` in `file`."""

    file: io.FileIO
    position: int
    length: int

    def fileno(self) -> int:
        return self.file.fileno()

    def read(self) -> bytes:
        """The bytes of the slice (fewer only if the segment was truncated since)."""
        return os.pread(self.file.fileno(), self.length, self.position)


class FetchDataInfo(NamedTuple):
    """The answer to a log read: whole batches from the one containing `fetch_offset`, in order;
    a read_committed read adds the aborted transactions they overlap (None for other reads)."""

    fetch_offset: int
    slices: tuple[FileSlice, ...]
    aborted_transactions: tuple[AbortedTxn, ...] | None = None
    data: bytes | None = None  # the slices' bytes, when the log had them in memory (`recent_appends`)

    @property
    def size(self) -> int:
        return sum(piece.length for piece in self.slices)

    def read_bytes(self) -> bytes:
        if self.data is not None:
            return self.data
        if len(self.slices) == 1:
            return self.slices[0].read()
        return b"".join(piece.read() for piece in self.slices)
