"""Where each leader epoch starts in a log (Kafka's LeaderEpochFileCache), for divergence checks.

A leader answers a follower's (fetch offset, last fetched epoch) with the end offset of that
epoch in its own log; a follower truncates to the smaller of the leader's and its own end
offset of the diverging epoch. Both questions are answered here from (epoch, start offset)
pairs in ascending order.
"""

from __future__ import annotations


class EpochCache:
    def __init__(self) -> None:
        self.entries: list[tuple[int, int]] = []

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` unless a batch of it came before."""
        if not self.entries or epoch > self.entries[-1][0]:
            self.entries.append((epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after `end_offset` (the log was truncated there)."""
        while self.entries and self.entries[-1][1] >= end_offset:
            self.entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly below `start_offset`; the one covering it now starts there."""
        while len(self.entries) > 1 and self.entries[1][1] <= start_offset:
            self.entries.pop(0)
        if self.entries and self.entries[0][1] < start_offset:
            self.entries[0] = (self.entries[0][0], start_offset)

    def clear(self) -> None:
        self.entries = []

    def last_epoch(self, default: int) -> int:
        return self.entries[-1][0] if self.entries else default

    def end_offset_for(self, epoch: int, log_end_offset: int, base: tuple[int, int]) -> tuple[int, int]:
        """(largest epoch <= `epoch`, the offset where it ends); `base` (epoch, offset) below all."""
        found = base
        for index, (known, start) in enumerate(self.entries):
            if known > epoch:
                return found
            end = self.entries[index + 1][1] if index + 1 < len(self.entries) else log_end_offset
            found = (known, end)
        return found
