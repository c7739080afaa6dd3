"""Transactions in the log: open transactions and the last stable offset, markers, the `.txnindex`,
its rebuild by recovery and after truncation, followers, producer snapshots across restarts."""

from __future__ import annotations

import os
import struct

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.records.record import BatchBuilder
from gregor.storage.log import Log, LogConfig
from gregor.storage.producer_state import ProducerStateManager, read_snapshot
from gregor.storage.segment import TXN_INDEX_SUFFIX
from gregor.storage.txn_index import ENTRY_SIZE, AbortedTxn, decode_entries

from tests.unit.storage.helpers import NOW, batch

A, B = 1000, 2000
EPOCH = 0


def txn(producer_id: int, sequence: int, count: int = 1, epoch: int = EPOCH) -> bytes:
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                           is_transactional=True)
    for i in range(count):
        builder.append(NOW, None, b"%d-%d" % (producer_id, sequence + i))
    return builder.build()


def open_log(path, clean: bool = True, recovery_point: int = 0, **config) -> Log:
    return Log(str(path / "topic-0"), LogConfig(**config), NOW, recovery_point=recovery_point, clean_shutdown=clean)


def marker(log: Log, producer_id: int, commit: bool, coordinator_epoch: int = 0, epoch: int = EPOCH) -> int:
    return log.append_txn_marker(producer_id, epoch, coordinator_epoch, commit, 0, NOW).first_offset


def build(log: Log) -> None:
    """A: [0,1] committed at 3; B: [2] and [4] aborted at 5; A: [6,7] open; B: [8] open."""
    log.append_as_leader(txn(A, 0, 2), 0, NOW)
    log.append_as_leader(txn(B, 0), 0, NOW)
    assert marker(log, A, True) == 3
    log.append_as_leader(txn(B, 1), 0, NOW)
    assert marker(log, B, False) == 5
    log.append_as_leader(txn(A, 2, 2), 0, NOW)
    log.append_as_leader(txn(B, 2), 0, NOW)


def state(log: Log) -> tuple[int, int, list[AbortedTxn]]:
    log.high_watermark = log.log_end_offset
    return log.last_stable_offset, log.log_end_offset, log.aborted_transactions(0, log.log_end_offset)


EXPECTED = (6, 9, [AbortedTxn(B, 2, 5, 6)])


def test_open_transactions_hold_the_last_stable_offset_and_aborts_are_indexed(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn(A, 0, 2), 0, NOW)
    assert log.last_stable_offset == 0, "bounded by the high watermark"
    log.high_watermark = 2
    assert log.last_stable_offset == 0, "A's transaction is open from offset 0"
    build_rest = log.append_as_leader(txn(B, 0), 0, NOW)
    assert build_rest.first_offset == 2
    marker(log, A, True)
    log.high_watermark = 3
    assert log.last_stable_offset == 0, "A's marker (3) is not yet below the high watermark"
    log.high_watermark = 4
    assert log.last_stable_offset == 2, "A's transaction is stable; B's is open at 2"
    log.append_as_leader(txn(B, 1), 0, NOW)
    marker(log, B, False)
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == 6
    (segment,) = log.segments
    with open(segment.txn_index.path, "rb") as handle:
        data = handle.read()
    assert len(data) == ENTRY_SIZE == 34
    assert struct.unpack(">hqqqq", data) == (0, B, 2, 5, 6)
    assert decode_entries(data) == [AbortedTxn(B, 2, 5, 6)]


def test_the_index_is_complete_and_bounded_by_the_range(tmp_path):
    log = open_log(tmp_path)
    build(log)
    assert state(log) == EXPECTED
    assert log.aborted_transactions(6, 9) == [], "B's aborted transaction ended at 5"
    assert log.aborted_transactions(0, 2) == [], "it started at 2"
    marker(log, A, True)
    marker(log, B, False)
    assert log.aborted_transactions(0, 20) == [AbortedTxn(B, 2, 5, 6), AbortedTxn(B, 8, 10, 11)]


def test_a_read_gets_the_aborted_transactions_its_batches_overlap(tmp_path):
    log = open_log(tmp_path, segment_bytes=200)
    build(log)
    marker(log, A, True)
    marker(log, B, False)  # B's [8] aborted at 10
    log.high_watermark = log.log_end_offset
    first = log.read(0, 1, log.last_stable_offset)  # one batch: A's [0, 1]
    assert log.end_of_read(first) == 2
    assert log.aborted_transactions(0, log.end_of_read(first)) == []
    to_b = log.read(0, 1 << 20, 3)
    assert log.end_of_read(to_b) == 3
    assert log.aborted_transactions(0, 3) == [AbortedTxn(B, 2, 5, 6)]
    everything = log.read(0, 1 << 20, log.last_stable_offset)
    assert log.end_of_read(everything) == log.log_end_offset == 11
    assert log.aborted_transactions(0, 11) == [AbortedTxn(B, 2, 5, 6), AbortedTxn(B, 8, 10, 11)]


def test_a_marker_only_closes_what_is_open_and_fences_stale_coordinators_and_producers(tmp_path):
    log = open_log(tmp_path)
    marker(log, A, True, coordinator_epoch=5)  # no data: completes nothing, remembers the coordinator
    assert log.producer_state.ongoing == {} and log.producer_state.unreplicated == []
    with pytest.raises(KafkaError) as fenced:
        marker(log, A, False, coordinator_epoch=4)
    assert fenced.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    log.append_as_leader(txn(A, 0, epoch=1), 0, NOW)
    with pytest.raises(KafkaError) as stale:
        marker(log, A, False, coordinator_epoch=5, epoch=0)
    assert stale.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 2, "refused markers are not appended"
    marker(log, A, False, coordinator_epoch=5, epoch=2)  # the coordinator aborted with a bumped epoch
    log.append_as_leader(txn(A, 0, epoch=2), 0, NOW)  # the new epoch starts at sequence 0 again
    assert log.producer_state.producers[A].current_txn_first_offset == 3


def test_recovery_rebuilds_the_index_and_the_last_stable_offset(tmp_path):
    log = open_log(tmp_path, segment_bytes=200)
    build(log)
    assert len(log.segments) > 3, "the transactions span segments"
    before = state(log)
    assert before == EXPECTED
    log.close()
    for name in os.listdir(tmp_path / "topic-0"):
        if name.endswith((TXN_INDEX_SUFFIX, ".snapshot")):
            os.remove(tmp_path / "topic-0" / name)
    recovered = open_log(tmp_path, clean=False, segment_bytes=200)
    assert state(recovered) == before
    entries = [entry for segment in recovered.segments for entry in segment.txn_index.entries]
    assert entries == [AbortedTxn(B, 2, 5, 6)]


def test_recovery_from_a_snapshot_below_the_recovered_segments(tmp_path):
    log = open_log(tmp_path, segment_bytes=200)
    build(log)
    recovery_point = log.segments[2].base_offset
    log.close()
    recovered = open_log(tmp_path, clean=False, recovery_point=recovery_point, segment_bytes=200)
    assert state(recovered) == EXPECTED
    assert [e for s in recovered.segments for e in s.txn_index.entries] == [AbortedTxn(B, 2, 5, 6)]


def test_truncation_drops_index_entries_and_reopens_transactions(tmp_path):
    log = open_log(tmp_path)
    build(log)
    log.truncate_to(5)  # B's ABORT marker goes
    assert log.aborted_transactions(0, 10) == []
    assert log.producer_state.ongoing == {B: 2}
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == 2


def test_the_last_stable_offset_is_not_below_the_log_start(tmp_path):
    log = open_log(tmp_path)
    build(log)
    log.high_watermark = log.log_end_offset
    log.delete_records_before(7)  # inside A's open transaction (6..)
    assert log.last_stable_offset == 7


def test_a_follower_gets_the_leaders_transaction_state(tmp_path):
    leader = open_log(tmp_path / "leader")
    build(leader)
    follower = open_log(tmp_path / "follower")
    follower.append_as_follower(leader.read_bytes(0, 1 << 20), NOW)
    assert state(follower) == EXPECTED
    assert follower.producer_state.producers[A].current_txn_first_offset == 6


def test_segments_deleted_take_their_txnindex(tmp_path):
    log = open_log(tmp_path, segment_bytes=200, file_delete_delay_ms=0)
    build(log)
    log.append_as_leader(batch(1), 0, NOW)
    indexed = next(s for s in log.segments if s.txn_index.entries)
    path = indexed.txn_index.path
    assert os.path.exists(path)
    log.high_watermark = log.log_end_offset
    log.delete_records_before(log.log_end_offset)
    log.apply_retention(NOW)
    assert not os.path.exists(path) and not os.path.exists(path + ".deleted")


def test_snapshot_round_trip_carries_open_transactions(tmp_path):
    log = open_log(tmp_path)
    build(log)
    log.close()
    snapshots = log.producer_state.snapshot_offsets()
    assert snapshots == [9]
    producers = read_snapshot(log.producer_state.snapshot_path(9))
    assert {pid: (e.epoch, e.current_txn_first_offset, e.coordinator_epoch, e.last_sequence)
            for pid, e in producers.items()} == {A: (0, 6, 0, 3), B: (0, 8, 0, 2)}
    reopened = open_log(tmp_path)
    assert reopened.producer_state.ongoing == {A: 6, B: 8}
    assert state(reopened) == EXPECTED


def test_a_version_1_snapshot_is_still_read(tmp_path):
    from gregor.records.crc import crc32c
    body = struct.pack(">i", 1) + struct.pack(">qhqb", A, 3, NOW, 1) + struct.pack(">iiqq", 0, 4, 10, 14)
    (tmp_path / "00000000000000000015.snapshot").write_bytes(struct.pack(">hI", 1, crc32c(body)) + body)
    manager = ProducerStateManager(str(tmp_path))
    assert manager.load_snapshot(20) == 15
    entry = manager.producers[A]
    assert (entry.epoch, entry.last_sequence, entry.coordinator_epoch, entry.current_txn_first_offset) == (3, 4, -1, -1)
