"""Inputs the decoder fuzzer (scripts/fuzz.py) found, each kept as a regression test."""

from __future__ import annotations

import struct

from gregor.records.batch import parse_header
from gregor.records.convert import downconvert, upconvert_to_v2
from gregor.records.crc import crc32c
from gregor.records.legacy import _entry, iter_legacy
from gregor.records.record import BatchBuilder, decode_records

from tests.unit.records.helpers import MAX, NOW

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)


def test_legacy_timestamps_far_apart_up_and_down_convert_as_java_longs():
    """Found: a magic-1 set whose second timestamp is near INT64_MIN made the v2 timestamp delta
    overflow a long, and down-conversion failed with struct.error instead of answering."""
    legacy = _entry(0, 1, 0, NOW, b"k", b"a") + _entry(1, 1, 0, INT64_MIN + 5, b"k", b"b")
    batch = upconvert_to_v2(legacy, MAX)
    records = decode_records(batch, 0, parse_header(batch), MAX)
    assert [r.timestamp for r in records] == [NOW, INT64_MIN + 5]
    back = list(iter_legacy(downconvert(batch, 1, MAX), MAX))
    assert [r.timestamp for r in back] == [NOW, INT64_MIN + 5]


def with_header_fields(batch: bytes, base_offset: int, base_timestamp: int) -> bytes:
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">q", out, 27, base_timestamp)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def test_offsets_and_timestamps_past_int64_wrap_as_in_kafka_and_down_convert():
    builder = BatchBuilder()
    builder.append(NOW, b"k", b"a")
    builder.append(NOW + 10, b"k", b"b")
    batch = with_header_fields(builder.build(), INT64_MAX, INT64_MAX - 5)
    records = decode_records(batch, 0, parse_header(batch), MAX)
    assert [r.offset for r in records] == [INT64_MAX, INT64_MIN]
    assert [r.timestamp for r in records] == [INT64_MAX - 5, INT64_MIN + 4]
    assert len(list(iter_legacy(downconvert(batch, 1, MAX), MAX))) == 2
