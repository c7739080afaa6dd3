"""Compaction of transactional data (Kafka's cleaner): nothing past the last stable offset is
cleaned, aborted records go without hiding committed values, markers stay while their
transaction has batches and go delete.retention.ms after the cleaning that could first remove them."""

from __future__ import annotations

from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records
from gregor.storage.cleaned_batch import DELETE_HORIZON_MASK
from gregor.storage.cleaner import dirtiness
from gregor.storage.log import Log
from gregor.storage.txn_index import AbortedTxn

from tests.unit.storage.cleaner_helpers import clean, compacted, settle
from tests.unit.storage.helpers import NOW

A, B = 11, 22


def txn(log: Log, producer_id: int, sequence: int, pairs, now_ms: int = NOW) -> int:
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=0, base_sequence=sequence, is_transactional=True)
    for key, value in pairs:
        builder.append(now_ms, key, value)
    return log.append_as_leader(builder.build(), 0, now_ms).first_offset


def end(log: Log, producer_id: int, commit: bool, now_ms: int = NOW) -> int:
    return log.append_txn_marker(producer_id, 0, 0, commit, 0, now_ms).first_offset


def data(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of the records of data batches."""
    read = log.read_bytes(log.log_start_offset, 1 << 30)
    return [(r.offset, r.key, r.value) for h, pos in scan_batches(read)[0] if not h.is_control
            for r in decode_records(read, pos, h, 1 << 20)]


def markers(log: Log) -> list[tuple[int, bool]]:
    """(offset, has a delete horizon) of each control batch."""
    return [(h.base_offset, bool(h.attributes & DELETE_HORIZON_MASK))
            for h, _ in scan_batches(log.read_bytes(log.log_start_offset, 1 << 30))[0] if h.is_control]


def test_aborted_records_go_and_markers_follow_their_transactions(tmp_path):
    log = compacted(str(tmp_path / "t-0"), delete_retention_ms=1000)
    txn(log, A, 0, [(b"k", b"committed"), (b"j", b"1")])  # 0-1
    end(log, A, True)  # 2
    txn(log, B, 0, [(b"k", b"aborted")])  # 3
    end(log, B, False)  # 4
    txn(log, B, 1, [(b"m", b"2")])  # 5
    end(log, B, True)  # 6
    settle(log)
    assert [e for s in log.segments for e in s.txn_index.entries] == [AbortedTxn(B, 3, 4, 5)]
    clean(log, NOW)
    assert data(log) == [(0, b"k", b"committed"), (1, b"j", b"1"), (5, b"m", b"2")], \
        "the aborted k goes and does not hide the committed one"
    assert markers(log) == [(2, False), (4, False), (6, False)], "each transaction had batches in this cleaning"
    assert [e for s in log.segments for e in s.txn_index.entries] == [AbortedTxn(B, 3, 4, 5)]

    log.append_as_leader(_plain(b"x"), 0, NOW)
    settle(log)
    clean(log, NOW)
    assert markers(log) == [(2, False), (4, True), (6, False)], "the abort has no batch left: a horizon is stamped"
    assert [e for s in log.segments for e in s.txn_index.entries] == []
    log.append_as_leader(_plain(b"y"), 0, NOW + 999)
    settle(log, NOW + 999)
    clean(log, NOW + 999)
    assert markers(log) == [(2, False), (4, True), (6, False)]
    log.append_as_leader(_plain(b"z"), 0, NOW + 1000)
    settle(log, NOW + 1000)
    clean(log, NOW + 1000)
    assert markers(log) == [(2, False), (6, False)]
    assert [k for _, k, _ in data(log)] == [b"k", b"j", b"m", b"x", b"y", b"z"]


def _plain(key: bytes) -> bytes:
    builder = BatchBuilder()
    builder.append(NOW, key, key)
    return builder.build()


def test_nothing_past_the_last_stable_offset_is_cleaned(tmp_path):
    log = compacted(str(tmp_path / "t-0"))
    log.append_as_leader(_plain(b"k"), 0, NOW)
    open_at = txn(log, A, 0, [(b"k", b"open")])
    log.append_as_leader(_plain(b"k"), 0, NOW)
    settle(log)
    assert log.last_stable_offset == open_at
    assert dirtiness(log, NOW).first_uncleanable <= open_at
