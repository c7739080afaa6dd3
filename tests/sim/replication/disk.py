"""A process death as the disk sees it: open files dropped, and optionally the data past the last
fsync lost, with part of the first lost batch left behind (a torn write)."""

from __future__ import annotations

import os
import random

from gregor.storage.log import Log
from gregor.storage.segment import LogSegment


def durable_size(segment: LogSegment, recovery_point: int) -> int:
    """Bytes of the segment that a flush made durable (flushes cover whole batches up to the recovery point)."""
    if segment.next_offset <= recovery_point:
        return segment.size
    for position, header in segment.batches():
        if header.base_offset >= recovery_point:
            return position
    return segment.size


def crash_log(log: Log, lose_unflushed: bool, torn: bool, rng: random.Random) -> None:
    """Close the log's files without a clean shutdown; cut what was not flushed when asked."""
    cuts = [(segment.path, durable_size(segment, log.recovery_point)) for segment in log.segments] \
        if lose_unflushed else []
    for segment in log.segments:
        segment.close()
    for path, size in cuts:
        if size < os.path.getsize(path):
            with open(path, "r+b") as handle:
                handle.seek(size)
                lost = handle.read()
                handle.truncate(size)
                if torn:
                    handle.seek(size)
                    handle.write(lost[:rng.randint(1, max(1, min(len(lost) - 1, 80)))])
            torn = False
