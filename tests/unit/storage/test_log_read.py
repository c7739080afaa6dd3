"""Log.read: file slices of whole batches, bounds, errors, timestamps."""

from __future__ import annotations

import os

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import scan_batches
from gregor.storage.errors import StorageError
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW, batch, records_of


def filled(tmp_path, batches: int = 40, **config) -> Log:
    log = Log(str(tmp_path / "t-0"), LogConfig(**{"segment_bytes": 2000, "index_interval_bytes": 200, **config}), NOW)
    for i in range(batches):
        log.append_as_leader(batch(3, NOW + i, 40, tag=b"b%d" % i), 0, NOW)
    log.high_watermark = log.log_end_offset
    return log


def test_read_at_every_offset_starts_at_the_batch_holding_it(tmp_path):
    log = filled(tmp_path)
    assert len(log.segments) > 3
    for offset in range(log.log_end_offset):
        info = log.read(offset, 1)
        assert len(info.slices) == 1
        records = records_of(info.read_bytes())
        assert records[0][0] == offset - offset % 3 and records[-1][0] == records[0][0] + 2


def test_read_spans_segments_and_returns_exactly_what_was_appended(tmp_path):
    log = filled(tmp_path)
    info = log.read(0, 10**9)
    assert len(info.slices) == len(log.segments)
    assert info.size == log.size_in_bytes()
    records = records_of(info.read_bytes())
    assert [o for o, _ in records] == list(range(120))
    assert records[5][1].startswith(b"b1-2-")
    piece = info.slices[0]
    with open(log.segments[0].path, "rb") as handle:
        handle.seek(piece.position)
        assert handle.read(piece.length) == piece.read()
    assert os.pread(piece.fileno(), 10, 0) == piece.read()[:10]


def test_max_bytes_and_min_one_batch(tmp_path):
    log = filled(tmp_path)
    one = len(batch(3, NOW, 40, tag=b"b0"))
    assert log.read(0, 0).size == one
    assert log.read(0, 0, min_one_batch=False).size == 0
    assert log.read(0, one * 3 + one // 2).size == one * 3
    batches, end = scan_batches(log.read_bytes(4, one * 5))
    assert end == one * 5 and batches[0][0].base_offset == 3


def test_max_offset_never_returns_a_batch_reaching_it(tmp_path):
    log = filled(tmp_path)
    assert [o for o, _ in records_of(log.read_bytes(0, 10**9, max_offset=30))][-1] == 29
    assert [o for o, _ in records_of(log.read_bytes(0, 10**9, max_offset=31))][-1] == 29
    assert log.read(30, 10**9, max_offset=31).size == 0
    assert log.read(30, 10**9, max_offset=30).size == 0


def test_offsets_out_of_range(tmp_path):
    log = filled(tmp_path, batches=3)
    assert log.read(9, 100).slices == ()
    for offset in (-1, 10):
        with pytest.raises(StorageError) as raised:
            log.read(offset, 100)
        assert raised.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    log.delete_records_before(4)
    with pytest.raises(StorageError):
        log.read(3, 100)
    assert records_of(log.read_bytes(4, 1))[0][0] == 3, "the batch holding the log start offset"


def test_offset_for_timestamp_and_max_timestamp(tmp_path):
    log = filled(tmp_path)
    assert log.offset_for_timestamp(NOW) == (0, NOW)
    assert log.offset_for_timestamp(NOW + 17) == (51, NOW + 17)
    assert log.offset_for_timestamp(NOW + 40) is None
    assert log.max_timestamp_offset() == (117, NOW + 39)
    log.delete_records_before(52)
    assert log.offset_for_timestamp(NOW) == (52, NOW + 17)
    empty = Log(str(tmp_path / "e-0"), LogConfig(), NOW)
    assert empty.max_timestamp_offset() is None and empty.offset_for_timestamp(0) is None
