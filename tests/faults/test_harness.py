"""Short runs of the fault harness (tools/faults) in the suite: a 3-broker cluster behind the proxy,
the queue workload, a few cycles of each fault type, then the checker, which must find nothing.
`scripts/faults.py` runs the long version; its `--check` reads a saved history back."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tools.faults.run import Settings, run

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(300)]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _short(tmp_path, faults: list[str], seed: int, **extra) -> Settings:
    return Settings(root=str(tmp_path / "cluster"), faults=faults, seed=seed, cycles=len(faults), producers=1,
                    group_consumers=2, readers=1, rate=25, fault_seconds=(2.0, 4.0), rest_seconds=(0.5, 1.5),
                    **extra)


def test_kill9_and_sigstop_lose_nothing(tmp_path):
    outcome = run(_short(tmp_path, ["kill", "pause", "kill"], seed=18))
    assert outcome.report.faults == {"kill": 2, "pause": 1}
    assert outcome.report.acknowledged > 200
    assert outcome.report.valid, outcome.report.summary()
    assert not outcome.stalled, outcome.stalled


def test_partitions_and_slow_links_lose_nothing(tmp_path):
    history, plot = tmp_path / "history.jsonl", tmp_path / "history.png"
    faults = ["partition-leader", "isolate-leader", "partition-controller", "partition-client", "slow"]
    outcome = run(_short(tmp_path, faults, seed=2013, history_path=str(history), plot_path=str(plot)))
    assert outcome.report.faults == dict.fromkeys(faults, 1)
    assert outcome.report.acknowledged > 200
    assert outcome.report.valid, outcome.report.summary()
    assert not outcome.stalled, outcome.stalled
    assert plot.read_bytes().startswith(b"\x89PNG")
    checked = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "faults.py"), "--check", str(history)],
                             capture_output=True, text=True, timeout=60, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "lost-write 0, unseen 0, duplicate 0" in checked.stdout
