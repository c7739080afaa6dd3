"""Where each leader epoch starts in a partition's log: Kafka's LeaderEpochFileCache.

A leader stamps its epoch on every batch it appends. Knowing where each epoch starts lets a
follower find where its log diverges from the leader's (KIP-101, KIP-279): the leader answers
"where does epoch e end in your log?" with the start offset of its first epoch above e (its log
end offset when e is its latest epoch), and the follower truncates there. The high watermark
alone cannot answer that question, which is what loses or forks data after restarts.

Kept in the partition directory as Kafka's `leader-epoch-checkpoint`: a version line `0`, a
count line, then `epoch start_offset` per line, written to a temporary file, fsynced and renamed
on every change (changes are rare: one per new epoch or truncation).
"""

from __future__ import annotations

import os
from typing import NamedTuple

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_VERSION = 0


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class EpochEndOffset(NamedTuple):
    """An OffsetsForLeaderEpoch answer: the largest known epoch <= the one asked, and where it ends."""

    epoch: int
    end_offset: int


UNDEFINED = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


class LeaderEpochCache:
    """(epoch, start offset) entries, both strictly increasing, mirrored to `path`.

    `loaded` tells whether a valid checkpoint file was found; without one the log rebuilds the
    entries from its batch headers.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: list[EpochEntry] = []
        self.loaded = self._read()

    def _read(self) -> bool:
        try:
            with open(self.path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except FileNotFoundError:
            return False
        if len(lines) < 2 or lines[0].strip() != str(_VERSION) or not lines[1].strip().isdigit():
            return False
        count = int(lines[1])
        if len(lines) - 2 < count:
            return False
        entries: list[EpochEntry] = []
        for line in lines[2:2 + count]:
            parts = line.split()
            if len(parts) != 2 or not all(part.isdigit() for part in parts):
                return False
            entry = EpochEntry(int(parts[0]), int(parts[1]))
            if entries and (entry.epoch <= entries[-1].epoch or entry.start_offset < entries[-1].start_offset):
                return False
            entries.append(entry)
        self.entries = entries
        return True

    def _write(self) -> None:
        lines = [str(_VERSION), str(len(self.entries))]
        lines.extend(f"{entry.epoch} {entry.start_offset}" for entry in self.entries)
        temporary = self.path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or UNDEFINED_EPOCH when nothing is known."""
        return self.entries[-1].epoch if self.entries else UNDEFINED_EPOCH

    def start_offset_of(self, epoch: int) -> int | None:
        for entry in self.entries:
            if entry.epoch == epoch:
                return entry.start_offset
        return None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` (a no-op when it is already the latest epoch
        and starts no later).

        Entries that contradict the new one (an epoch as large, or a start as late) are dropped
        first, as Kafka does, so the entries stay monotonic whatever the caller appends.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"cannot assign epoch {epoch} at offset {start_offset}")
        if self.entries:
            latest = self.entries[-1]
            if latest.epoch == epoch and latest.start_offset <= start_offset:
                return
        while self.entries and (self.entries[-1].epoch >= epoch or self.entries[-1].start_offset >= start_offset):
            self.entries.pop()
        self.entries.append(EpochEntry(epoch, start_offset))
        self._write()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> EpochEndOffset:
        """OffsetsForLeaderEpoch's answer for `epoch` (Kafka's `endOffsetFor`).

        The latest epoch ends at the log end offset. An older one ends where the next higher known
        epoch starts, reported with the largest known epoch <= `epoch` (or `epoch` itself when it
        is below every known one: the data before was deleted). Undefined for an undefined or
        unknown-future epoch, and for an empty cache.
        """
        if epoch == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED
        if self.entries[-1].epoch == epoch:
            return EpochEndOffset(epoch, log_end_offset)
        floor = None
        for entry in self.entries:
            if entry.epoch > epoch:
                return EpochEndOffset(epoch if floor is None else floor.epoch, entry.start_offset)
            floor = entry
        return UNDEFINED

    def truncate_from_end(self, end_offset: int) -> None:
        """The log now ends at `end_offset`: forget epochs that start at or after it."""
        if self.entries and self.entries[-1].start_offset >= end_offset:
            while self.entries and self.entries[-1].start_offset >= end_offset:
                self.entries.pop()
            self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: drop epochs wholly below it; the epoch covering it
        starts there."""
        keep = 0
        while keep + 1 < len(self.entries) and self.entries[keep + 1].start_offset <= start_offset:
            keep += 1
        if keep == 0 and (not self.entries or self.entries[0].start_offset >= start_offset):
            return
        covering = self.entries[keep]
        self.entries[:keep + 1] = [EpochEntry(covering.epoch, max(covering.start_offset, start_offset))]
        self._write()

    def clear(self) -> None:
        """The log was emptied (truncated fully or replaced)."""
        self.entries = []
        self._write()
