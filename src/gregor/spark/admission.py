"""Admission control for micro-batches: `maxOffsetsPerTrigger` caps a batch, `minOffsetsPerTrigger`
with `maxTriggerDelay` holds a batch back until enough records are there or the delay is over.

Both are pure functions of offsets (and of an injected clock), so they are tested without Spark.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping

from gregor.client import TopicPartition
from gregor.spark.offsets import PartitionOffsets


def available(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> int:
    """How many offsets lie between start and latest (`start` holds every partition of `latest`)."""
    return sum(max(latest[tp] - start[tp], 0) for tp in latest)


def cap(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int) -> PartitionOffsets:
    """End offsets covering at most `max_rows` offsets, shared in proportion to what each partition
    has waiting (largest remainders get the odd offsets), so a busy partition cannot starve the
    others and the batch holds exactly `max_rows` when that many are waiting."""
    waiting = {tp: max(latest[tp] - start[tp], 0) for tp in latest}
    total = sum(waiting.values())
    if total <= max_rows:
        return dict(latest)
    shares = {tp: waiting[tp] * max_rows // total for tp in waiting}
    leftover = max_rows - sum(shares.values())
    by_remainder = sorted(waiting, key=lambda tp: (-(waiting[tp] * max_rows % total), tp))
    for tp in by_remainder[:leftover]:
        shares[tp] += 1
    return {tp: start[tp] + shares[tp] if waiting[tp] else latest[tp] for tp in latest}


class TriggerDelay:
    """Holds micro-batches back while fewer than `min_rows` offsets wait, for at most
    `max_delay_ms` since the last batch that went ahead (or since the query started)."""

    def __init__(self, min_rows: int, max_delay_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._min_rows = min_rows
        self._max_delay = max_delay_ms / 1000
        self._clock = clock
        self._last = clock()

    def admit(self, waiting: int) -> bool:
        """Whether a batch of `waiting` offsets may run now; an admitted batch restarts the delay."""
        now = self._clock()
        if waiting >= self._min_rows or (waiting > 0 and now - self._last >= self._max_delay):
            self._last = now
            return True
        return False
