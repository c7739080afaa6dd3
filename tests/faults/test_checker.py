"""The queue checker (tools/faults/checker.py) on hand-made histories: each anomaly class found
where it is, and a clean history found clean."""

from __future__ import annotations

from tools.faults.checker import ANOMALIES, check
from tools.faults.history import History


def _send(history: History, process: str, partition: int, offset: int, value: int) -> None:
    history.add(process, "invoke", "send", [partition, value])
    history.add(process, "ok", "send", [partition, offset, value], latency=0.01)

def _clean() -> History:
    history = History()
    for offset in range(4):
        _send(history, "p0", 0, offset, offset)
    history.add("c0", "ok", "assign", [0])
    history.add("c0", "ok", "poll", [[0, 0, 0], [0, 1, 1]])
    history.add("c0", "ok", "poll", [[0, 2, 2], [0, 3, 3]])
    return history

def _only(report, name: str) -> None:
    assert report.counts[name] > 0, report.summary()
    assert all(report.counts[other] == 0 for other in ANOMALIES if other != name), report.summary()

def test_a_clean_history_is_valid():
    report = check(_clean().ops)
    assert report.valid and report.acknowledged == 4 and report.read_values == 4

def test_an_acknowledged_value_never_read_below_the_read_frontier_is_lost():
    history = _clean()
    _send(history, "p0", 0, 4, 4)
    _send(history, "p0", 0, 5, 5)
    history.add("c0", "ok", "poll", [[0, 5, 5]])  # 4 skipped by the reader and by everyone
    report = check(history.ops)
    assert report.examples["lost-write"] == [{"value": 4, "partition": 0, "offset": 4}]
    assert report.counts["poll-skip"] == 1  # the reader jumped over offset 4, which held a value

def test_an_acknowledged_value_beyond_every_read_is_unseen():
    history = _clean()
    _send(history, "p0", 0, 4, 4)
    _only(check(history.ops), "unseen")

def test_a_value_at_two_offsets_is_a_duplicate():
    history = _clean()
    history.add("c0", "ok", "poll", [[0, 4, 3]])
    report = check(history.ops)
    assert report.examples["duplicate"] == [{"value": 3, "at": [(0, 3), (0, 4)]}]

def test_two_values_at_one_offset_are_inconsistent():
    history = _clean()
    history.add("c1", "ok", "assign", [0])
    history.add("c1", "ok", "poll", [[0, 0, 0], [0, 1, 1], [0, 2, 2], [0, 3, 99]])
    report = check(history.ops)
    assert report.examples["inconsistent-offsets"] == [{"partition": 0, "offset": 3, "values": [3, 99]}]

def test_a_producers_offsets_going_back_are_nonmonotonic():
    history = History()
    _send(history, "p0", 0, 1, 1)
    _send(history, "p0", 0, 0, 0)
    history.add("c0", "ok", "assign", [0])
    history.add("c0", "ok", "poll", [[0, 0, 0], [0, 1, 1]])
    _only(check(history.ops), "nonmonotonic-send")

def test_a_consumer_going_back_is_nonmonotonic_unless_reassigned():
    history = _clean()
    history.add("c0", "ok", "poll", [[0, 1, 1]])
    _only(check(history.ops), "nonmonotonic-poll")
    history = _clean()
    history.add("c0", "ok", "assign", [0])  # a rebalance may rewind it to the committed offset
    history.add("c0", "ok", "poll", [[0, 1, 1]])
    assert check(history.ops).valid

def test_indeterminate_sends_are_never_lost():
    history = _clean()
    history.add("p0", "invoke", "send", [0, 7])
    history.add("p0", "info", "send", [0, 7, "_MSG_TIMED_OUT"])
    report = check(history.ops)
    assert report.valid and report.indeterminate == 1
