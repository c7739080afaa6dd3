"""Log.append_as_leader: numbering in place, validation with Kafka's error codes, rolls, flushes."""

from __future__ import annotations

import os

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.records.batch import parse_header, scan_batches
from gregor.records.record import BatchBuilder
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW, batch, index_is_consistent, records_of


def open_log(tmp_path, **config) -> Log:
    return Log(str(tmp_path / "topic-0"), LogConfig(**config), NOW)


def error_code(call) -> int:
    with pytest.raises(KafkaError) as raised:
        call()
    return raised.value.code


def test_offsets_epoch_and_append_info(tmp_path):
    log = open_log(tmp_path)
    first = log.append_as_leader(batch(3), 7, NOW)
    second = log.append_as_leader(batch(2) + batch(4), 7, NOW)
    assert (first.first_offset, first.last_offset, first.record_count, first.log_append_time) == (0, 2, 3, -1)
    assert (second.first_offset, second.last_offset, second.record_count) == (3, 8, 6)
    assert log.log_end_offset == 9 and log.high_watermark == 0
    data = log.read_bytes(0, 10**6)
    headers = [h for h, _ in scan_batches(data)[0]]
    assert [h.base_offset for h in headers] == [0, 3, 5]
    assert {h.partition_leader_epoch for h in headers} == {7}
    assert [offset for offset, _ in records_of(data)] == list(range(9))


def test_accepts_memoryview_and_never_mutates_the_callers_bytes(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(), 0, NOW)
    raw = bytearray(batch(2))
    before = bytes(raw)
    log.append_as_leader(memoryview(raw), 0, NOW)
    assert bytes(raw) == before
    assert records_of(log.read_bytes(1, 10**6))[0][0] == 1


def test_log_append_time_rewrites_the_timestamp_and_crc(tmp_path):
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(batch(2, timestamp=5), 0, NOW)
    assert info.log_append_time == NOW
    header = parse_header(log.read_bytes(0, 10**6))
    assert header.timestamp_type == 1 and header.max_timestamp == NOW


@pytest.mark.parametrize("mangle, code", [
    (lambda b: b[:-3], ErrorCode.CORRUPT_MESSAGE),
    (lambda b: b + b"\x00" * 5, ErrorCode.CORRUPT_MESSAGE),
    (lambda b: b[:12], ErrorCode.CORRUPT_MESSAGE),
    (lambda b: b[:70] + bytes([b[70] ^ 1]) + b[71:], ErrorCode.CORRUPT_MESSAGE),
    (lambda b: b[:16] + b"\x01" + b[17:], ErrorCode.CORRUPT_MESSAGE),
])
def test_malformed_requests_are_refused_and_nothing_is_written(tmp_path, mangle, code):
    log = open_log(tmp_path)
    log.append_as_leader(batch(), 0, NOW)
    size = log.size_in_bytes()
    assert error_code(lambda: log.append_as_leader(batch(2) + mangle(batch(3)), 0, NOW)) == code
    assert log.log_end_offset == 1 and log.size_in_bytes() == size
    assert error_code(lambda: log.append_as_leader(b"", 0, NOW)) == ErrorCode.CORRUPT_MESSAGE


def test_size_limits(tmp_path):
    log = open_log(tmp_path, max_message_bytes=500, segment_bytes=2000)
    big = batch(1, value_size=600)
    assert error_code(lambda: log.append_as_leader(big, 0, NOW)) == ErrorCode.MESSAGE_TOO_LARGE
    many = b"".join(batch(1, value_size=300) for _ in range(6))
    assert error_code(lambda: log.append_as_leader(many, 0, NOW)) == ErrorCode.RECORD_LIST_TOO_LARGE
    assert log.log_end_offset == 0


def test_timestamp_bounds(tmp_path):
    log = open_log(tmp_path, timestamp_before_max_ms=1000, timestamp_after_max_ms=500)
    assert error_code(lambda: log.append_as_leader(batch(timestamp=NOW - 1001), 0, NOW)) == ErrorCode.INVALID_TIMESTAMP
    assert error_code(lambda: log.append_as_leader(batch(timestamp=NOW + 501), 0, NOW)) == ErrorCode.INVALID_TIMESTAMP
    log.append_as_leader(batch(timestamp=NOW - 1000), 0, NOW)
    log.append_as_leader(batch(timestamp=NOW + 500), 0, NOW)
    config = LogConfig.from_properties({"message.timestamp.difference.max.ms": "100"})
    assert config.timestamp_before_max_ms == config.timestamp_after_max_ms == 100


def test_a_non_transactional_batch_inside_a_transaction_is_refused(tmp_path):
    log = open_log(tmp_path)
    builder = BatchBuilder(producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True)
    builder.append(NOW, None, b"x")
    log.append_as_leader(builder.build(), 0, NOW)
    plain = BatchBuilder(producer_id=1, producer_epoch=0, base_sequence=1)
    plain.append(NOW, None, b"y")
    assert error_code(lambda: log.append_as_leader(plain.build(), 0, NOW)) == ErrorCode.INVALID_TXN_STATE
    assert log.log_end_offset == 1


def test_roll_on_segment_bytes(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000, index_interval_bytes=100)
    size = len(batch(value_size=100))
    for _ in range(20):
        log.append_as_leader(batch(value_size=100), 0, NOW)
    assert len(log.segments) > 3
    per_segment = 1000 // size
    assert all(s.size <= 1000 for s in log.segments)
    assert [s.base_offset for s in log.segments] == list(range(0, 20, per_segment))
    names = sorted(n for n in os.listdir(log.directory) if n.endswith(".log"))
    assert names == [f"{s.base_offset:020d}.log" for s in log.segments]
    assert log.recovery_point == log.active_segment.base_offset, "a roll flushes the finished segment"
    assert os.path.exists(os.path.join(log.directory, f"{log.active_segment.base_offset:020d}.snapshot"))
    index_is_consistent(log)


def test_roll_on_segment_ms_by_record_timestamps_else_clock(tmp_path):
    log = open_log(tmp_path, segment_ms=1000)
    log.append_as_leader(batch(timestamp=NOW), 0, NOW)
    log.append_as_leader(batch(timestamp=NOW + 1000), 0, NOW + 5000)
    assert len(log.segments) == 1
    log.append_as_leader(batch(timestamp=NOW + 1001), 0, NOW + 5000)
    assert len(log.segments) == 2
    clock = open_log(tmp_path / "b", segment_ms=1000)
    clock.append_as_leader(batch(timestamp=-1), 0, NOW)
    clock.append_as_leader(batch(timestamp=-1), 0, NOW + 1000)
    assert len(clock.segments) == 1
    clock.append_as_leader(batch(timestamp=-1), 0, NOW + 1001)
    assert len(clock.segments) == 2


def test_roll_when_the_offset_index_is_full(tmp_path):
    log = open_log(tmp_path, segment_index_bytes=16, index_interval_bytes=10)
    for _ in range(10):
        log.append_as_leader(batch(), 0, NOW)
    assert all(s.offset_index.entries <= 2 for s in log.segments)
    assert len(log.segments) >= 3


def test_flush_messages_advances_the_recovery_point(tmp_path):
    log = open_log(tmp_path, flush_messages=5)
    log.append_as_leader(batch(3), 0, NOW)
    assert log.recovery_point == 0
    log.append_as_leader(batch(3), 0, NOW)
    assert log.recovery_point == 6
    timed = open_log(tmp_path / "b", flush_ms=1000)
    timed.append_as_leader(batch(3), 0, NOW)
    timed.flush_if_due(NOW + 999)
    assert timed.recovery_point == 0
    timed.flush_if_due(NOW + 1000)
    assert timed.recovery_point == 3 and timed.last_flush_ms == NOW + 1000


def test_config_from_properties_takes_kafka_topic_keys():
    config = LogConfig.from_properties({
        "segment.bytes": "1024", "segment.ms": "60000", "retention.ms": "-1", "retention.bytes": "4096",
        "index.interval.bytes": "128", "segment.index.bytes": "800", "flush.messages": "1",
        "message.timestamp.type": "LogAppendTime", "max.message.bytes": "2048", "cleanup.policy": "compact",
        "min.insync.replicas": "2", "file.delete.delay.ms": "0"})
    assert (config.segment_bytes, config.segment_ms, config.retention_ms, config.retention_bytes) == \
        (1024, 60000, -1, 4096)
    assert config.log_append_time and not config.deletes and config.min_insync_replicas == 2
    assert LogConfig.from_properties({}) == LogConfig()
    assert LogConfig().flush_ms == 9223372036854775807 and LogConfig().deletes
    with pytest.raises(ValueError):
        LogConfig.from_properties({"message.timestamp.type": "Sometime"})
