"""Log.append_many_as_leader: several produce requests' records in order, each with the outcome
append_as_leader would give it, written in as few writes as producer state and segment.bytes allow."""

from __future__ import annotations

import errno
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.storage import segment as segment_module
from gregor.storage.log import AppendInfo, Log, LogConfig

from tests.unit.storage.helpers import NOW, batch, count_writes, index_is_consistent, records_of


def open_log(tmp_path, name: str = "topic-0", **config) -> Log:
    return Log(str(tmp_path / name), LogConfig(**config), NOW)


@pytest.fixture
def writes(monkeypatch) -> list[int]:
    """The size of every segment write."""
    return count_writes(monkeypatch)


def corrupt(records: bytes) -> bytes:
    return records[:70] + bytes([records[70] ^ 1]) + records[71:]


def test_sets_are_numbered_in_order_and_written_at_once_as_one_by_one(tmp_path, writes):
    sets = [batch(1, tag=b"a"), batch(2, tag=b"b") + batch(1, tag=b"c"), batch(3, tag=b"d"), batch(1, tag=b"e")]
    alone = open_log(tmp_path, "alone-0")
    one_by_one = [alone.append_as_leader(records, 4, NOW) for records in sets]
    writes.clear()
    together = open_log(tmp_path)
    outcomes = together.append_many_as_leader(sets, 4, NOW)
    assert outcomes == one_by_one
    assert [(o.first_offset, o.last_offset, o.record_count) for o in outcomes] == [(0, 0, 1), (1, 3, 3), (4, 6, 3),
                                                                                   (7, 7, 1)]
    assert writes == [sum(len(records) for records in sets)]
    assert together.read_bytes(0, 1 << 20) == alone.read_bytes(0, 1 << 20)
    assert together.log_end_offset == 8
    index_is_consistent(together)


def test_a_bad_set_gets_its_error_and_the_others_are_numbered_without_a_gap(tmp_path):
    log = open_log(tmp_path, max_message_bytes=400)
    outcomes = log.append_many_as_leader([batch(2, tag=b"a"), corrupt(batch(1)), batch(1, value_size=500),
                                          b"", batch(1, tag=b"b")], 0, NOW)
    assert [o.code if isinstance(o, KafkaError) else (o.first_offset, o.last_offset) for o in outcomes] == [
        (0, 1), ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, (2, 2)]
    assert [value[:1] for _, value in records_of(log.read_bytes(0, 1 << 20))] == [b"a", b"a", b"b"]
    index_is_consistent(log)


def test_a_set_with_a_producer_id_ends_its_run_so_the_next_sees_its_sequence(tmp_path, writes):
    log = open_log(tmp_path)
    first = batch(2, producer_id=9, producer_epoch=0, base_sequence=0)
    outcomes = log.append_many_as_leader([
        batch(1), first, batch(1, producer_id=9, producer_epoch=0, base_sequence=2), first,
        batch(1, producer_id=9, producer_epoch=0, base_sequence=7), batch(1)], 0, NOW)
    assert outcomes[:4] == [AppendInfo(0, 0, -1, 0, 1), AppendInfo(1, 2, -1, 0, 2), AppendInfo(3, 3, -1, 0, 1),
                            AppendInfo(1, 2, -1, 0, 0, duplicate=True)]
    assert outcomes[4].code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert outcomes[5] == AppendInfo(4, 4, -1, 0, 1)
    assert len(writes) == 3  # [plain, first], [seq 2], [plain]
    assert log.log_end_offset == 5


def test_a_run_that_would_pass_segment_bytes_is_split_and_rolls(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000, index_interval_bytes=100)
    sets = [batch(1, value_size=250, tag=b"%d" % i) for i in range(7)]
    outcomes = log.append_many_as_leader(sets, 0, NOW)
    assert [o.first_offset for o in outcomes] == list(range(7))
    assert len(log.segments) >= 3 and all(segment.size <= 1000 for segment in log.segments)
    assert [value[:1] for _, value in records_of(log.read_bytes(0, 1 << 20))] == [b"%d" % i for i in range(7)]
    index_is_consistent(log)


def test_a_failed_write_fails_its_run_and_every_set_after_it_and_the_log_carries_on(tmp_path, monkeypatch):
    log = open_log(tmp_path)
    log.append_as_leader(batch(1), 0, NOW)

    def full(fd: int, data, offset: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(segment_module.os, "pwrite", full)
    outcomes = log.append_many_as_leader([batch(1), batch(1, producer_id=3, producer_epoch=0, base_sequence=0),
                                          batch(1), corrupt(batch(1))], 0, NOW)
    assert [o.code for o in outcomes] == [ErrorCode.KAFKA_STORAGE_ERROR] * 3 + [ErrorCode.KAFKA_STORAGE_ERROR]
    assert log.log_end_offset == 1
    monkeypatch.undo()
    assert log.append_many_as_leader([batch(1, producer_id=3, producer_epoch=0, base_sequence=0)], 0, NOW) == [
        AppendInfo(1, 1, -1, 0, 1)]  # the failed write left no producer state behind


def _record_set(kind: str, producer: int, sequence: int, count: int) -> bytes:
    if kind == "plain":
        return batch(count, tag=b"p")
    if kind == "corrupt":
        return corrupt(batch(count))
    if kind == "large":
        return batch(1, value_size=700)
    return batch(count, producer_id=producer, producer_epoch=0, base_sequence=sequence, tag=b"i")


_sets = st.lists(st.tuples(st.sampled_from(["plain", "plain", "idempotent", "idempotent", "corrupt", "large"]),
                           st.integers(1, 2), st.integers(0, 6), st.integers(1, 3)), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(_sets)
def test_any_mix_of_sets_has_the_outcomes_and_the_log_of_appending_them_one_by_one(tmp_path, drawn):
    """Plain, idempotent (in sequence, duplicated, out of order), corrupt and oversized sets, over
    small segments: the same outcomes and the same bytes as append_as_leader one set at a time."""
    sets = [_record_set(kind, producer, sequence, count) for kind, producer, sequence, count in drawn]
    config = {"segment_bytes": 900, "index_interval_bytes": 200, "max_message_bytes": 600}
    root = tempfile.mkdtemp(dir=tmp_path)
    alone = Log(os.path.join(root, "alone-0"), LogConfig(**config), NOW)
    together = Log(os.path.join(root, "together-0"), LogConfig(**config), NOW)
    expected: list[object] = []
    for records in sets:
        try:
            expected.append(alone.append_as_leader(records, 0, NOW))
        except KafkaError as error:
            expected.append(ErrorCode(error.code))
    outcomes = together.append_many_as_leader(sets, 0, NOW)
    assert [ErrorCode(o.code) if isinstance(o, KafkaError) else o for o in outcomes] == expected
    assert together.read_bytes(0, 1 << 20) == alone.read_bytes(0, 1 << 20)
    assert [s.base_offset for s in together.segments] == [s.base_offset for s in alone.segments]
    index_is_consistent(together)
