"""benchmarks/machine_speed.py: the line a latency benchmark prints about the machine's speed. The
steal share is computed from /proc/stat's cpu line; the reference workload's time is only checked
to be a time (no time is judged)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "benchmarks"))

import machine_speed  # noqa: E402

#            user nice system idle iowait irq softirq steal guest guest_nice
_BEFORE = "cpu  1000 0 200 8000 50 0 10 40 30 0\ncpu0 500 0 100 4000 25 0 5 20 15 0\nintr 1 2 3\n"
_AFTER = "cpu  1600 0 300 8300 50 0 10 140 90 0\ncpu0 800 0 150 4150 25 0 5 70 45 0\nintr 1 2 3\n"


def test_the_steal_share_is_stolen_ticks_over_all_ticks_of_the_cpu_line():
    texts = iter([_BEFORE, _AFTER])
    meter = machine_speed.StealMeter(read=lambda: next(texts))
    # all ticks (the first eight columns; guest time is inside user time) 9300 -> 10400, steal 40 -> 140
    assert meter.share() == pytest.approx(100 / 1100)


def test_no_share_without_proc_stat_or_its_steal_column():
    assert machine_speed.StealMeter(read=lambda: None).share() is None
    old_kernel = "cpu  1000 0 200 8000 50 0 10\n"
    assert machine_speed.StealMeter(read=lambda: old_kernel).share() is None


def test_no_share_when_no_tick_passed():
    assert machine_speed.StealMeter(read=lambda: _BEFORE).share() is None


def test_the_line_names_both_times_and_the_share():
    line = machine_speed.describe(1234.4, 1500.6, 0.0512)
    assert line.startswith(f"machine: {os.cpu_count()} CPUs;")
    assert "1234 µs before" in line and "1501 µs after" in line and "5.1 %" in line
    assert "n/a" in machine_speed.describe(1.0, 1.0, None)


def test_the_reference_workload_is_timed():
    assert machine_speed.reference_us(repeats=3) > 0
