"""Up-conversion (Produce v0-v2 payloads to v2 batches) and down-conversion (v2 to Fetch v0-v3 message sets).

Kafka's rules: v0 has no timestamps (-1), headers do not exist below v2, down-conversion keeps offsets and
the batch's timestamp type, up-conversion numbers the records from 0 for the log to assign.
kafka-python reads every converted set as a second opinion.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import parse_header, set_log_append_time
from gregor.records.compression import Compression
from gregor.records.convert import detect_magic, downconvert, upconvert_to_v2
from gregor.records.errors import RecordsError
from gregor.records.legacy import build_legacy, iter_legacy
from gregor.records.record import CONTROL_COMMIT, BatchBuilder

from tests.unit.records.helpers import (
    LEGACY_CODECS, MAX, NOW, build, decode_all, gregor_tuples, kafka_python_batches, kafka_python_records,
    legacy_records_strategy, records_strategy,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def kafka_python_legacy_view(data: bytes) -> list[tuple]:
    return [(r.offset, -1 if r.timestamp is None else r.timestamp, r.timestamp_type or 0, r.key, r.value)
            for _, items in kafka_python_batches(data) for r in items]


def gregor_legacy_view(data: bytes) -> list[tuple]:
    return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value) for r in iter_legacy(data, MAX)]


# -- down-conversion ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(records=records_strategy, base_offset=st.integers(0, 1 << 40))
def test_downconversion_keeps_offsets_keys_values_and_v1_timestamps(magic, codec, records, base_offset):
    data = build(records, codec, base_offset=base_offset)
    legacy = downconvert(data, magic, MAX)
    assert detect_magic(legacy) == magic
    expected = [(base_offset + i, ts if magic else -1, 0, key, value)
                for i, (ts, key, value, _) in enumerate(records)]
    assert gregor_legacy_view(legacy) == expected
    assert kafka_python_legacy_view(legacy) == expected
    assert {r.compression for r in iter_legacy(legacy, MAX)} == {codec}


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_downconversion_to_v1_keeps_log_append_time(codec):
    """Kafka's down-conversion writes the batch's timestamp type and the log-append time into v1."""
    data = bytearray(build([(NOW + i, b"k", b"v" * 40, []) for i in range(3)], codec, base_offset=7))
    set_log_append_time(data, 0, parse_header(data), NOW + 5_000)
    legacy = downconvert(bytes(data), 1, MAX)
    expected = [(7 + i, NOW + 5_000, 1, b"k", b"v" * 40) for i in range(3)]
    assert gregor_legacy_view(legacy) == expected
    assert kafka_python_legacy_view(legacy) == expected


def test_downconversion_of_several_batches_skips_control_batches():
    control = BatchBuilder(producer_id=3, producer_epoch=0, is_transactional=True, is_control=True, base_offset=2)
    control.append(NOW, struct.pack(">hh", 0, CONTROL_COMMIT), struct.pack(">hi", 0, 0))
    data = (build([(NOW, b"a", b"1", [("h", b"dropped")]), (NOW + 1, b"b", b"2", [])], Compression.GZIP)
            + control.build()
            + build([(NOW + 3, None, b"3", [])], Compression.NONE, base_offset=3)
            + build([(NOW + 4, b"d", None, [])], Compression.LZ4, base_offset=4))
    legacy = downconvert(data, 1, MAX)
    expected = [(0, NOW, 0, b"a", b"1"), (1, NOW + 1, 0, b"b", b"2"), (3, NOW + 3, 0, None, b"3"),
                (4, NOW + 4, 0, b"d", None)]
    assert gregor_legacy_view(legacy) == kafka_python_legacy_view(legacy) == expected
    assert [batch.compression_type for batch, _ in kafka_python_batches(legacy)] == [
        Compression.GZIP, Compression.NONE, Compression.LZ4]


def test_downconversion_ignores_a_trailing_partial_batch():
    whole = build([(NOW, b"k", b"v", [])], base_offset=9)
    partial = build([(NOW, b"k", b"w", [])], base_offset=10)[:-5]
    assert gregor_legacy_view(downconvert(whole + partial, 1, MAX)) == [(9, NOW, 0, b"k", b"v")]


# -- up-conversion -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(records=legacy_records_strategy, first=st.integers(0, 1000))
def test_upconversion_keeps_records_and_numbers_them_for_the_log(magic, codec, records, first):
    legacy = build_legacy([(first + i, ts, key, value) for i, (ts, key, value) in enumerate(records)], magic, codec)
    data = upconvert_to_v2(legacy, MAX)
    header = parse_header(data)
    assert (header.compression, header.records_count, header.base_offset) == (codec, len(records), 0)
    expected = [(i, ts if magic else -1, key, value, []) for i, (ts, key, value) in enumerate(records)]
    assert gregor_tuples(decode_all(data)) == expected
    assert kafka_python_records(data) == expected


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_upconversion_of_kafka_python_produce_payloads(magic, codec):
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(5):
        builder.append(i, NOW + i, b"key" if i % 2 else None, b"value %d " % i * 10)
    data = upconvert_to_v2(bytes(builder.build()), MAX)
    expected = [(i, NOW + i if magic else -1, b"key" if i % 2 else None, b"value %d " % i * 10, [])
                for i in range(5)]
    assert gregor_tuples(decode_all(data)) == kafka_python_records(data) == expected


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_upconversion_keeps_a_v1_log_append_time_wrapper(codec):
    data = upconvert_to_v2(downconvert(_log_append_batch(codec), 1, MAX), MAX)
    assert parse_header(data).timestamp_type == 1
    assert [r.timestamp for r in decode_all(data)] == [NOW + 5_000] * 3


def _log_append_batch(codec: int) -> bytes:
    data = bytearray(build([(NOW + i, b"k", b"v" * 40, []) for i in range(3)], codec))
    set_log_append_time(data, 0, parse_header(data), NOW + 5_000)
    return bytes(data)


@pytest.mark.parametrize("data", [b"", b"\x00" * 11, build_legacy([(0, NOW, b"k", b"value")], 1)[:-1]])
def test_upconversion_of_no_complete_message_is_refused(data):
    with pytest.raises(RecordsError) as raised:
        upconvert_to_v2(data, MAX)
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


# -- round trips -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(records=records_strategy)
def test_v2_down_then_up_gives_the_records_back_without_headers(magic, codec, records):
    data = build(records, codec)
    back = upconvert_to_v2(downconvert(data, magic, MAX), MAX)
    assert parse_header(back).compression == codec
    assert gregor_tuples(decode_all(back)) == [
        (i, ts if magic else -1, key, value, []) for i, (ts, key, value, _) in enumerate(records)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(records=legacy_records_strategy)
def test_legacy_up_then_down_gives_the_same_messages_back(magic, codec, records):
    legacy = build_legacy([(i, ts, key, value) for i, (ts, key, value) in enumerate(records)], magic, codec)
    back = downconvert(upconvert_to_v2(legacy, MAX), magic, MAX)
    assert gregor_legacy_view(back) == kafka_python_legacy_view(back) == gregor_legacy_view(legacy)
    if codec in (Compression.NONE, Compression.SNAPPY, Compression.LZ4):  # gzip stamps the time of day
        assert back == legacy
