"""benchmarks/replication_round.py drives the leader's and the follower's replication code through
real bytes: a short run must keep the follower in step (the script checks the high watermark) and
print its table, or the figures docs/latency.md quotes could no longer be taken. No time is judged."""

from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_short_run_prints_a_row_per_session_size():
    done = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "replication_round.py"), "--rounds", "500",
                           "--idle-partitions", "0", "3"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split("|")[1].strip() for row in rows] == ["0", "3"]
    assert all(float(cell) > 0 for row in rows for cell in row.strip("| ").split("|")[1:])


def test_cold_caches_are_an_option():
    done = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "replication_round.py"), "--rounds", "500",
                           "--idle-partitions", "1", "--evict-mb", "1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 1 |")]
    assert len(rows) == 1 and all(float(cell) > 0 for cell in rows[0].strip("| ").split("|")[1:])


def test_bad_arguments_are_one_line():
    done = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "replication_round.py"), "--rounds", "10"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--rounds must be at least 500" in done.stderr
    done = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "replication_round.py"), "--evict-mb", "-1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--evict-mb not negative" in done.stderr
