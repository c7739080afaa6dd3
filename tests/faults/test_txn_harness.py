"""A short transactional fault run (tools/faults/txn_workload.py): librdkafka transactional
producers writing to several partitions per transaction, a fifth of them aborted on purpose,
read_committed readers, one broker killed with kill -9 and restarted; the transactional checker
must find no aborted read, no pre-committed read, no information-flow cycle and nothing lost."""

from __future__ import annotations

import pytest

from tools.faults.run import Settings, run

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(300)]


def test_transactions_under_a_broker_kill_show_no_aborted_read_and_lose_nothing(tmp_path):
    settings = Settings(root=str(tmp_path / "cluster"), workload="txn", faults=["kill"], seed=5, cycles=1,
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
