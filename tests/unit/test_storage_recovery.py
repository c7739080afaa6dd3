"""Log recovery: a torn tail and a corrupt batch are truncated; indexes are rebuilt consistently."""

from __future__ import annotations

import os

from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder
from gregor.storage.log import Log, LogConfig

NOW = 1_700_000_000_000


def fill(log: Log, batches: int) -> None:
    for i in range(batches):
        builder = BatchBuilder()
        for j in range(5):
            builder.append(NOW + i, f"k{j}".encode(), f"value-{i}-{j}".encode() * 10)
        log.append_as_leader(builder.build(), 0, NOW)


def test_torn_tail_is_truncated_and_reads_stay_consistent(tmp_path):
    config = LogConfig(segment_bytes=4000, index_interval_bytes=300)
    log = Log(str(tmp_path / "t-0"), config, NOW)
    fill(log, 60)
    log.checkpoint_flush()
    last = log.active_segment.path
    os.truncate(last, os.path.getsize(last) - 10)
    reopened = Log(str(tmp_path / "t-0"), config, NOW)
    assert reopened.truncated_bytes_at_load > 0
    assert reopened.log_end_offset == 295
    for offset in range(0, reopened.log_end_offset, 7):
        batches, _ = scan_batches(reopened.read_bytes(offset, 1))
        assert batches[0][0].base_offset <= offset <= batches[0][0].last_offset


def test_corrupt_batch_in_the_middle_truncates_there(tmp_path):
    config = LogConfig(index_interval_bytes=300)
    log = Log(str(tmp_path / "t-0"), config, NOW)
    fill(log, 10)
    log.checkpoint_flush()
    path = log.active_segment.path
    with open(path, "r+b") as handle:
        handle.seek(os.path.getsize(path) // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))
    reopened = Log(str(tmp_path / "t-0"), config, NOW)
    assert 0 < reopened.log_end_offset < 50
    fill(reopened, 1)
    assert reopened.log_end_offset % 5 == 0


def test_duplicate_idempotent_batch_returns_the_original_offsets(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(), NOW)
    builder = BatchBuilder(producer_id=7, producer_epoch=0, base_sequence=0)
    builder.append(NOW, None, b"once")
    batch = builder.build()
    first = log.append_as_leader(batch, 0, NOW)
    again = log.append_as_leader(batch, 0, NOW)
    assert again.duplicate and again.first_offset == first.first_offset
    assert log.log_end_offset == 1
    log.close()
    reopened = Log(str(tmp_path / "t-0"), LogConfig(), NOW, clean_shutdown=True)
    assert reopened.append_as_leader(batch, 0, NOW).duplicate
