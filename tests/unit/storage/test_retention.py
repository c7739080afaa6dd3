"""Retention by time and size, DeleteRecords, deferred deletion of segment files."""

from __future__ import annotations

import os

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.storage.errors import StorageError
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW, batch, records_of

HOUR = 3_600_000


def aged_log(tmp_path, **config) -> Log:
    """Ten segments of 3 batches each; segment i holds timestamps NOW + i hours."""
    log = Log(str(tmp_path / "t-0"), LogConfig(**{"segment_ms": HOUR - 1, **config}), NOW)
    for i in range(30):
        log.append_as_leader(batch(2, NOW + (i // 3) * HOUR), 0, NOW)
    log.high_watermark = log.log_end_offset
    assert len(log.segments) == 10
    return log


def files(log: Log, suffix: str) -> list[str]:
    return sorted(n for n in os.listdir(log.directory) if n.endswith(suffix))


def test_retention_ms_deletes_segments_by_largest_timestamp(tmp_path):
    log = aged_log(tmp_path, retention_ms=5 * HOUR + HOUR // 2)
    assert log.apply_retention(NOW + 9 * HOUR) == 4, "segments 0-3 are more than 5.5 hours old"
    assert log.log_start_offset == 24 and log.segments[0].base_offset == 24
    assert len(files(log, ".log.deleted")) == 4 and len(files(log, ".log")) == 6
    assert log.apply_retention(NOW + 9 * HOUR + 59_999) == 0
    assert len(files(log, ".log.deleted")) == 4
    log.apply_retention(NOW + 9 * HOUR + 60_000)
    assert files(log, ".deleted") == []
    assert records_of(log.read_bytes(24, 1))[0][0] == 24


def test_expired_active_segment_is_rolled_then_deleted(tmp_path):
    log = aged_log(tmp_path, retention_ms=HOUR)
    assert log.apply_retention(NOW + 100 * HOUR) == 10
    assert log.log_start_offset == log.log_end_offset == 60
    assert len(log.segments) == 1 and log.active_segment.is_empty
    assert log.append_as_leader(batch(), 0, NOW + 100 * HOUR).first_offset == 60


def test_retention_never_deletes_above_the_high_watermark(tmp_path):
    log = aged_log(tmp_path, retention_ms=HOUR)
    log.high_watermark = 13
    assert log.apply_retention(NOW + 100 * HOUR) == 2
    assert log.log_start_offset == 12


def test_retention_bytes_keeps_the_newest_within_the_limit(tmp_path):
    log = aged_log(tmp_path, retention_ms=-1)
    per_segment = log.segments[0].size
    log.update_config(LogConfig(retention_ms=-1, retention_bytes=per_segment * 4 + 1, segment_ms=HOUR - 1))
    assert log.apply_retention(NOW) == 5, "Kafka keeps at least retention.bytes"
    assert log.size_in_bytes() == per_segment * 5 and log.log_start_offset == 30
    log.update_config(LogConfig(retention_ms=-1, retention_bytes=per_segment * 4, segment_ms=HOUR - 1))
    assert log.apply_retention(NOW) == 1
    assert log.size_in_bytes() == per_segment * 4 and log.log_start_offset == 36


def test_compact_only_policy_skips_time_and_size_retention(tmp_path):
    log = aged_log(tmp_path, retention_ms=1, retention_bytes=0, cleanup_policy="compact")
    assert log.apply_retention(NOW + 100 * HOUR) == 0


def test_delete_records_advances_the_log_start_and_drops_whole_segments(tmp_path):
    log = aged_log(tmp_path, retention_ms=-1)
    assert log.delete_records_before(20) == 20
    assert log.segments[0].base_offset == 18
    assert log.delete_records_before(10) == 20
    with pytest.raises(StorageError) as raised:
        log.delete_records_before(61)
    assert raised.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert log.delete_records_before(60) == 60
    assert len(log.segments) == 1 and log.log_end_offset == 60
    assert log.read(60, 100).size == 0


def test_slices_taken_before_a_deletion_stay_readable_until_the_delay(tmp_path):
    log = aged_log(tmp_path, retention_ms=HOUR)
    info = log.read(0, 10**6)
    expected = info.read_bytes()
    log.apply_retention(NOW + 100 * HOUR)
    assert info.read_bytes() == expected
    log.apply_retention(NOW + 101 * HOUR)
    with pytest.raises(ValueError):
        info.read_bytes()
