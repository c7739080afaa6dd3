"""The transactional checker (tools/faults/txn_checker.py) on hand-made histories: a clean one, and
one for each anomaly (G1a, pre-committed read, G1c, and the allowed log-order cycles G0-log and
G1c-log), each found where it is and nowhere else."""

from __future__ import annotations

from tools.faults.history import History
from tools.faults.txn_checker import ALLOWED, check_txn


def _txn(history: History, process: str, sends: list[tuple[int, int, int]], reads: list[list[int]] | None = None,
         outcome: str = "ok", commit: bool = True) -> None:
    """One transaction of `process`: its poll (as it happens), its sends, a commit request, its end."""
    history.add(process, "invoke", "txn", [["send", p, None, v] for p, _, v in sends])
    if reads:
        history.add(process, "ok", "poll", reads)
    if commit:
        history.add(process, "invoke", "commit", None)
    history.add(process, outcome, "txn", [["poll", reads or []], *(["send", p, o, v] for p, o, v in sends)])


def _read(history: History, process: str, records: list[list[int]]) -> None:
    history.add(process, "ok", "poll", records)


def _assign(history: History, *processes: str) -> None:
    for process in processes:
        history.add(process, "ok", "assign", [0, 1])


def _only(history: History, name: str) -> dict:
    report = check_txn(history.ops)
    assert report.counts[name] > 0, report.summary()
    assert all(count == 0 for other, count in report.counts.items() if other != name), report.summary()
    return report.examples[name][0]


def _clean() -> History:
    """t0 commits 0, 1 at offsets 0 (both partitions); t1 aborts 2, 3 at offsets 1 (their markers
    at 2); t0 commits 4, 5 at 3; a reader reads the committed ones, skipping the aborted offsets."""
    history = History()
    _assign(history, "t0", "t1", "r0")
    _txn(history, "t0", [(0, 0, 0), (1, 0, 1)])
    _txn(history, "t1", [(0, 1, 2), (1, 1, 3)], outcome="fail", commit=False)
    _txn(history, "t0", [(0, 3, 4), (1, 3, 5)])
    _read(history, "r0", [[0, 0, 0], [0, 3, 4], [1, 0, 1], [1, 3, 5]])
    return history


def test_a_clean_history_with_an_aborted_transaction_is_valid():
    report = check_txn(_clean().ops)
    assert report.valid and not any(report.counts.values()), report.summary()
    assert report.acknowledged == 4 and report.read_values == 4


def test_a_committed_value_nobody_read_is_still_a_loss():
    history = _clean()
    _txn(history, "t0", [(0, 5, 6)])
    _read(history, "r0", [[0, 7, 7]])
    _txn(history, "t1", [(0, 7, 7)])  # read before its commit too: both found
    report = check_txn(history.ops)
    assert report.examples["lost-write"] == [{"value": 6, "partition": 0, "offset": 5}]
    assert report.counts["pre-committed-read"] == 1 and not report.valid


def test_reading_an_aborted_value_is_g1a():
    history = _clean()
    _read(history, "r1", [[0, 1, 2]])
    example = _only(history, "G1a")
    assert example["value"] == 2 and example["writer-status"] == "fail"


def test_reading_a_value_whose_commit_was_never_requested_is_g1a():
    history = _clean()
    _txn(history, "t1", [(0, 5, 6)], outcome="info", commit=False)  # e.g. the producer turned fatal mid-way
    _read(history, "r0", [[0, 5, 6]])
    example = _only(history, "G1a")
    assert example["value"] == 6 and example["writer-status"] == "info"


def test_a_read_that_completes_before_the_commit_is_requested_is_pre_committed():
    history = _clean()
    history.add("t1", "invoke", "txn", [["send", 0, None, 6]])
    _read(history, "r0", [[0, 5, 6]])
    history.add("t1", "invoke", "commit", None)
    history.add("t1", "ok", "txn", [["poll", []], ["send", 0, 5, 6]])
    example = _only(history, "pre-committed-read")
    assert example["value"] == 6 and example["read-at"] < example["commit-at"]


def test_information_flowing_in_a_cycle_is_g1c():
    """t0's first transaction T1 reads what t1's T2 wrote, T2 reads what t0's later T3 wrote: T3
    follows T1 on one transactional id, so T1 -> T3 -> T2 -> T1."""
    history = History()
    _assign(history, "t0", "t1")
    history.add("t0", "invoke", "txn", [["send", 0, None, 10]])
    history.add("t0", "invoke", "commit", None)
    history.add("t0", "ok", "txn", [["poll", [[1, 1, 21]]], ["send", 0, 0, 10]])  # T1 read 21 (T2's)
    _txn(history, "t0", [(0, 1, 11)])  # T3
    history.add("t1", "invoke", "txn", [["send", 1, None, 21]])
    history.add("t1", "invoke", "commit", None)
    history.add("t1", "ok", "txn", [["poll", [[0, 1, 11]]], ["send", 1, 1, 21]])  # T2 read 11 (T3's)
    _read(history, "r0", [[0, 0, 10], [0, 1, 11], [1, 1, 21]])
    report = check_txn(history.ops)
    assert report.counts["G1c"] == 1 and report.examples["G1c"][0]["size"] == 3, report.summary()
    assert report.counts["G1c-log"] == 1  # the same cycle, seen with log-order edges too
    assert not report.valid


def test_interleaved_writes_are_a_g0_cycle_in_log_order_and_allowed():
    """Kafka lets two open transactions interleave in several partitions: t0 before t1 in
    partition 0, t1 before t0 in partition 1. Jepsen's G0; counted, not a failure."""
    history = History()
    _assign(history, "t0", "t1", "r0")
    history.add("t0", "invoke", "txn", [["send", 0, None, 0], ["send", 1, None, 1]])
    history.add("t1", "invoke", "txn", [["send", 0, None, 2], ["send", 1, None, 3]])
    history.add("t0", "invoke", "commit", None)
    history.add("t1", "invoke", "commit", None)
    history.add("t0", "ok", "txn", [["poll", []], ["send", 0, 0, 0], ["send", 1, 1, 1]])
    history.add("t1", "ok", "txn", [["poll", []], ["send", 0, 1, 2], ["send", 1, 0, 3]])
    _read(history, "r0", [[0, 0, 0], [0, 1, 2], [1, 0, 3], [1, 1, 1]])
    report = check_txn(history.ops)
    assert report.counts["G0-log"] == 1 and report.examples["G0-log"][0]["size"] == 2
    assert "G0-log" in ALLOWED and report.valid, report.summary()
    assert "allowed by the design: G0-log 1" in report.summary()


def test_a_write_read_cycle_in_log_order_is_g1c_log_and_allowed():
    """t0 writes 0 at offset 0 of partition 0 and reads t1's 1; t1 wrote 1 and then 2 at offset 1 of
    partition 0, after t0's: t0 -ww-> t1 (log order) and t1 -wr-> t0."""
    history = History()
    _assign(history, "t0", "t1", "r0")
    history.add("t0", "invoke", "txn", [["send", 0, None, 0]])
    history.add("t1", "invoke", "txn", [["send", 1, None, 1], ["send", 0, None, 2]])
    history.add("t1", "invoke", "commit", None)
    history.add("t1", "ok", "txn", [["poll", []], ["send", 1, 0, 1], ["send", 0, 1, 2]])
    history.add("t0", "ok", "poll", [[1, 0, 1]])
    history.add("t0", "invoke", "commit", None)
    history.add("t0", "ok", "txn", [["poll", [[1, 0, 1]]], ["send", 0, 0, 0]])
    _read(history, "r0", [[0, 0, 0], [0, 1, 2], [1, 0, 1]])
    report = check_txn(history.ops)
    assert report.counts["G1c-log"] == 1 and report.counts["G0-log"] == 0 and report.counts["G1c"] == 0
    assert report.valid, report.summary()
