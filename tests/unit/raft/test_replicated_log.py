"""One conformance suite for both ReplicatedLog implementations (memory and storage)."""

from __future__ import annotations

import os

import pytest

from gregor.raft.memory_log import MemoryLog
from gregor.raft.replicated_log import Snapshot, SnapshotId
from gregor.raft.storage_log import StorageLog, parse_snapshot_file_name
from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records


def batch(*values: bytes) -> bytes:
    builder = BatchBuilder()
    for value in values:
        builder.append(1000, None, value)
    return builder.build()


@pytest.fixture(params=["memory", "storage"])
def log(request, tmp_path):
    made = MemoryLog() if request.param == "memory" else StorageLog.open(str(tmp_path), 1000)
    yield made
    made.close()


def values(data: bytes) -> list[tuple[int, int, bytes]]:
    batches, _ = scan_batches(data)
    return [(r.offset, h.partition_leader_epoch, r.value) for h, pos in batches
            for r in decode_records(data, pos, h, 1 << 20)]


def test_empty_log(log):
    assert (log.start_offset, log.end_offset, log.high_watermark, log.last_fetched_epoch) == (0, 0, 0, 0)
    assert log.read(0, 10, 1000) == b""


def test_append_assigns_offsets_and_epochs(log):
    assert log.append_as_leader(batch(b"a", b"b"), 3, 1000) == (0, 1)
    assert log.append_as_leader(batch(b"c") + batch(b"d"), 4, 1000) == (2, 3)
    assert (log.end_offset, log.last_fetched_epoch) == (4, 4)
    assert values(log.read(0, 4, 1 << 20)) == [(0, 3, b"a"), (1, 3, b"b"), (2, 4, b"c"), (3, 4, b"d")]
    assert values(log.read(1, 3, 1 << 20)) == [(0, 3, b"a"), (1, 3, b"b"), (2, 4, b"c")]
    assert values(log.read(0, 4, 1)) == [(0, 3, b"a"), (1, 3, b"b")]


def test_high_watermark_is_monotonic_and_bounded(log):
    log.append_as_leader(batch(b"a", b"b"), 1, 1000)
    log.update_high_watermark(10)
    assert log.high_watermark == 2
    log.update_high_watermark(1)
    assert log.high_watermark == 2


def test_truncate_drops_the_tail(log):
    log.append_as_leader(batch(b"a"), 1, 1000)
    log.append_as_leader(batch(b"b"), 2, 1000)
    log.update_high_watermark(2)
    log.truncate_to(1)
    assert (log.end_offset, log.high_watermark, log.last_fetched_epoch) == (1, 1, 1)
    log.flush(1000)


def test_storage_log_survives_reopen(tmp_path):
    log = StorageLog.open(str(tmp_path), 1000)
    log.append_as_leader(batch(b"a"), 5, 1000)
    log.flush(1000)
    log.close()
    reopened = StorageLog.open(str(tmp_path), 2000)
    assert (reopened.end_offset, reopened.last_fetched_epoch, reopened.high_watermark) == (1, 5, 0)
    assert values(reopened.read(0, 1, 1 << 20)) == [(0, 5, b"a")]
    reopened.close()


def test_end_offset_for_epoch_and_follower_appends(log):
    log.append_as_leader(batch(b"a", b"b"), 1, 1000)
    log.append_as_leader(batch(b"c"), 3, 1000)
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.end_offset_for_epoch(2) == (1, 2)
    assert log.end_offset_for_epoch(3) == (3, 3)
    assert log.end_offset_for_epoch(0) == (0, 0)
    fetched = log.read(0, 3, 1 << 20)
    follower = MemoryLog()
    assert follower.append_as_follower(fetched, 1000) == (0, 2)
    assert values(follower.read(0, 3, 1 << 20)) == values(fetched)
    with pytest.raises(ValueError):
        follower.append_as_follower(fetched, 1000)
    log.truncate_to(2)
    assert (log.end_offset, log.last_fetched_epoch, log.end_offset_for_epoch(3)) == (2, 1, (1, 2))


def test_snapshots_cover_a_committed_prefix(log):
    log.append_as_leader(batch(b"a"), 1, 1000)
    log.append_as_leader(batch(b"b"), 2, 1000)
    log.append_as_leader(batch(b"c"), 2, 1000)
    with pytest.raises(ValueError):
        log.store_snapshot(Snapshot(SnapshotId(2, 2), b"image"))
    log.update_high_watermark(3)
    log.store_snapshot(Snapshot(SnapshotId(2, 2), b"image"))
    assert log.latest_snapshot() == Snapshot(SnapshotId(2, 2), b"image")
    assert log.delete_before_snapshot() == 2
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch) == (2, 3, 2)
    assert values(log.read(2, 3, 1 << 20)) == [(2, 2, b"c")]
    assert log.end_offset_for_epoch(1) == (2, 2)


def test_installing_a_snapshot_replaces_the_log(log):
    log.append_as_leader(batch(b"a"), 1, 1000)
    log.install_snapshot(Snapshot(SnapshotId(10, 4), b"image"))
    assert (log.start_offset, log.end_offset, log.high_watermark, log.last_fetched_epoch) == (10, 10, 10, 4)
    assert log.latest_snapshot().data == b"image"
    assert log.append_as_leader(batch(b"z"), 5, 1000) == (10, 10)


def test_memory_log_reopens_with_what_was_flushed():
    log = MemoryLog()
    log.append_as_leader(batch(b"a"), 1, 1000)
    log.flush(1000)
    log.append_as_leader(batch(b"b"), 1, 1000)
    log.update_high_watermark(2)
    reopened = log.reopened()
    assert (reopened.end_offset, reopened.high_watermark, reopened.last_fetched_epoch) == (1, 0, 1)


def test_storage_log_keeps_snapshots_in_kafka_named_files(tmp_path):
    log = StorageLog.open(str(tmp_path), 1000)
    log.append_as_leader(batch(b"a"), 1, 1000)
    log.append_as_leader(batch(b"b"), 3, 1000)
    log.update_high_watermark(2)
    log.store_snapshot(Snapshot(SnapshotId(1, 1), b"one"))
    log.store_snapshot(Snapshot(SnapshotId(2, 3), b"two"))
    names = sorted(n for n in os.listdir(log.directory) if n.endswith(".checkpoint"))
    assert names == ["00000000000000000002-0000000003.checkpoint"]
    assert parse_snapshot_file_name(names[0]) == SnapshotId(2, 3)
    assert parse_snapshot_file_name("00000000000000000002.log") is None
    log.close()
    reopened = StorageLog.open(str(tmp_path), 2000)
    assert reopened.latest_snapshot() == Snapshot(SnapshotId(2, 3), b"two")
    assert reopened.last_fetched_epoch == 3
    reopened.close()
