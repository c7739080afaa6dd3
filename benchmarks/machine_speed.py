"""How fast the machine running a benchmark is while it runs, so that figures taken at different
times can be compared.

A shared virtual machine's speed changes by the hour, and every figure of a latency benchmark
moves with it (the ratio of two rows of one invocation less so). `reference_us` times a fixed
pure-Python workload of the kind a broker runs (calls, attribute reads, small objects, dict
lookups, struct packing); `StealMeter` reads the share of CPU time the hypervisor gave to other
guests (Linux /proc/stat's steal column). `e2e_latency.py` prints both after its tables: figures
are comparable where the reference time is.
"""

from __future__ import annotations

import os
import statistics
import struct
import time
from typing import Callable

_PACK = struct.Struct(">iqh")


class _Item:
    __slots__ = ("key", "value", "offset")

    def __init__(self, key: int, value: bytes, offset: int) -> None:
        self.key = key
        self.value = value
        self.offset = offset


def _workload() -> int:
    index: dict[int, _Item] = {}
    total = 0
    for number in range(2_000):
        item = _Item(number % 97, b"x" * (number % 13), number)
        index[item.key] = item
        total += len(_PACK.pack(item.key, item.offset, len(item.value)))
        found = index.get(number % 89)
        if found is not None:
            total += found.offset
    return total


def reference_us(repeats: int = 15) -> float:
    """Median microseconds of the reference workload, warm (lower is faster)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        _workload()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def _cpu_ticks(stat_text: str) -> tuple[int, int] | None:
    """(all ticks, steal ticks) from the text of /proc/stat; None when it has no steal column."""
    for line in stat_text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(value) for value in fields[1:]]
            if len(ticks) < 8:
                return None
            # guest time is counted in user time already (proc(5)): the first eight columns are the total
            return sum(ticks[:8]), ticks[7]
    return None


def _read_stat() -> str | None:
    try:
        with open("/proc/stat") as handle:
            return handle.read()
    except OSError:
        return None


class StealMeter:
    """The share of CPU time stolen by the hypervisor between its start and `share()`."""

    def __init__(self, read: Callable[[], str | None] = _read_stat) -> None:
        self._read = read
        text = read()
        self._start = _cpu_ticks(text) if text is not None else None

    def share(self) -> float | None:
        """Stolen ticks / all ticks since the start (None where /proc/stat is not there)."""
        text = self._read()
        end = _cpu_ticks(text) if text is not None else None
        if self._start is None or end is None or end[0] <= self._start[0]:
            return None
        return (end[1] - self._start[1]) / (end[0] - self._start[0])


def describe(before_us: float, after_us: float, steal: float | None) -> str:
    """One line for a benchmark's output."""
    stolen = "n/a" if steal is None else f"{steal * 100:.1f} %"
    return (f"machine: {os.cpu_count()} CPUs; reference Python workload {before_us:.0f} µs before, "
            f"{after_us:.0f} µs after (lower is faster); "
            f"CPU time stolen by the hypervisor meanwhile {stolen}")
