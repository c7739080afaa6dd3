"""The aborted-transaction index of one segment: `<20-digit base offset>.txnindex`, Kafka's layout.

Each aborted transaction whose ABORT marker lies in the segment gets one 34-byte entry, appended
when the marker is: version int16 (0), producer id int64, first offset int64, last offset int64
(the marker's offset), last stable offset int64 (the first offset of the earliest other
transaction still open when it was aborted, else the marker's offset + 1). A read_committed fetch
collects the entries of the transactions that overlap what it returns, so the consumer can drop
their records.

As in Kafka the file is created on the first entry: a segment without aborted transactions has
none. Entries are kept in memory too (a segment rarely holds many); the file is the recovery
copy, rebuilt from the log when the segment is recovered.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """The entries of a `.txnindex` file's bytes; ValueError on a partial entry or unknown version."""
    if len(data) % ENTRY_SIZE:
        raise ValueError(f"{len(data)} bytes are not a whole number of {ENTRY_SIZE}-byte entries")
    entries = []
    for pos in range(0, len(data), ENTRY_SIZE):
        version, producer_id, first, last, lso = ENTRY.unpack_from(data, pos)
        if version != VERSION:
            raise ValueError(f"entry at byte {pos} has version {version}, expected {VERSION}")
        entries.append(AbortedTxn(producer_id, first, last, lso))
    return entries


class TransactionIndex:
    """A segment's aborted transactions, in marker order."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []

    def load(self) -> bool:
        """Read the file (absent: no entries); False when it is damaged, so the segment is recovered."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            self.entries = []
            return True
        try:
            self.entries = decode_entries(data)
        except ValueError:
            return False
        return True

    def append(self, txn: AbortedTxn) -> None:
        """Add an aborted transaction (written through to the file, created on the first one)."""
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"aborted transaction ending at {txn.last_offset} is not after the last "
                             f"one ({self.entries[-1].last_offset}) in {self.path}")
        self.entries.append(txn)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, ENTRY.pack(VERSION, *txn))
        finally:
            os.close(fd)

    def _rewrite(self) -> None:
        if not self.entries:
            self.delete()
            return
        with open(self.path, "wb") as handle:
            handle.write(b"".join(ENTRY.pack(VERSION, *txn) for txn in self.entries))

    def reset(self) -> None:
        """Forget every entry (recovery rebuilds them from the segment's batches)."""
        self.entries = []
        self.delete()

    def truncate_to(self, offset: int) -> None:
        """Drop the transactions whose marker is at or after `offset` (the log was truncated there)."""
        kept = [txn for txn in self.entries if txn.last_offset < offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._rewrite()

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """The transactions overlapping [fetch_offset, upper_bound), and whether the search is
        complete: an entry whose last stable offset reaches `upper_bound` means no transaction
        aborted later (in this segment or the next ones) can start below it."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def fsync(self) -> None:
        if self.entries and os.path.exists(self.path):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def rename(self, path: str) -> None:
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        if os.path.exists(self.path):
            os.remove(self.path)

