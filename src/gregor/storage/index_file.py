"""The file side of a sparse segment index: fixed-size entries appended as they are added.

Entries are written straight to the file with one `os.write` (the page cache makes them survive a
process crash, like Kafka's mmap), and kept in memory for lookups. Only the active segment holds
an open descriptor; an inactive segment's index is read once at load and then only truncated.
"""

from __future__ import annotations

import os


class IndexFile:
    """Append-only file of `entry_size`-byte entries, at most `max_index_bytes` long."""

    entry_size: int

    def __init__(self, path: str, max_index_bytes: int) -> None:
        self.path = path
        self.max_entries = max(max_index_bytes // self.entry_size, 1)
        self._fd: int | None = None
        self._unsynced = False

    def create(self) -> None:
        """Make the (empty) file exist, as Kafka does for every new segment."""
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644))

    def _read_file(self) -> bytes | None:
        """The whole file, or None when its size is not a whole number of entries."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return b""
        return None if len(data) % self.entry_size else data

    def _write(self, entry: bytes) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(self._fd, entry)
        self._unsynced = True

    def _truncate_file(self, entries: int) -> None:
        size = entries * self.entry_size
        if self._fd is not None:
            os.ftruncate(self._fd, size)
        elif os.path.exists(self.path):
            os.truncate(self.path, size)
        self._unsynced = True

    def fsync(self) -> None:
        if not self._unsynced:
            return
        if self._fd is not None:
            os.fsync(self._fd)
        elif os.path.exists(self.path):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._unsynced = False

    def close(self) -> None:
        """Release the descriptor; a later append reopens the file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def rename(self, path: str) -> None:
        self.close()
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.close()
        if os.path.exists(self.path):
            os.remove(self.path)
