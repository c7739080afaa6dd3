"""A short transactional fault run (tools/faults/txn_workload.py): librdkafka transactional
producers writing to several partitions per transaction, a fifth of them aborted on purpose,
read_committed readers, one broker killed with kill -9 and restarted; the transactional checker
must find no aborted read, no pre-committed read, no information-flow cycle and nothing lost."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tools.faults.run import Settings, run

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(300)]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_transactions_under_a_broker_kill_show_no_aborted_read_and_lose_nothing(tmp_path):
    history = tmp_path / "history.jsonl"
    settings = Settings(root=str(tmp_path / "cluster"), workload="txn", history_path=str(history), faults=["kill"], seed=5, cycles=1,
                        producers=2, group_consumers=1, readers=1, rate=10, abort_ratio=0.25,
                        fault_seconds=(3.0, 3.0), rest_seconds=(2.0, 2.0))
    outcome = run(settings)
    report = outcome.report
    transactions = [op for op in outcome.history.ops if op["f"] == "txn" and op["type"] != "invoke"]
    assert sum(op["type"] == "fail" for op in transactions) > 0  # aborted records were in the logs to be misread
    assert report.faults == {"kill": 1}
    assert report.acknowledged > 50
    assert report.valid, report.summary()
    assert not outcome.stalled, outcome.stalled
    checked = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "faults.py"), "--check", str(history)],
                             capture_output=True, text=True, timeout=60, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "G1a 0, pre-committed-read 0, G1c 0" in checked.stdout
