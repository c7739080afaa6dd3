"""The columnar batch decoder against two oracles: the consumer's per-record decoder and
kafka-python's record reader, on random batches (every codec, null keys and values, headers,
long varints, log-append time), and its refusal of malformed batches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from gregor.client.consumer.batch_decoder import RecordColumns, decode_batch
from gregor.client.consumer.record_decoder import iter_records
from gregor.records.batch import parse_header
from gregor.records.compression import Compression
from gregor.records.errors import RecordsError
from gregor.records.record import BatchBuilder
from tests.unit.records.helpers import kafka_python_records

MAX = 1 << 24
NOW = 1_700_000_000_000

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

payloads = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=60, max_size=300))
headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20))), max_size=3)
records = st.lists(st.tuples(st.integers(-(1 << 40), 1 << 40), payloads, payloads, headers), min_size=1, max_size=40)


def build(items, compression: int = 0, base_offset: int = 0, timestamp_type: int = 0) -> bytes:
    builder = BatchBuilder(compression=compression, base_offset=base_offset, timestamp_type=timestamp_type)
    for delta, key, value, record_headers in items:
        builder.append(NOW + delta, key, value, record_headers)
    return builder.build()


def rows(columns: RecordColumns) -> list[tuple]:
    return [(offset, timestamp, key, value, list(record_headers)) for offset, timestamp, key, value, record_headers
            in zip(columns.offsets, columns.timestamps, columns.keys, columns.values, columns.headers)]


@settings(max_examples=150, deadline=None)
@given(records, st.sampled_from(list(Compression)), st.integers(0, 1 << 50), st.sampled_from([0, 1]))
def test_same_records_as_the_per_record_decoder(items, compression, base_offset, timestamp_type):
    data = build(items, compression, base_offset, timestamp_type)
    header = parse_header(data, 0)
    columns = decode_batch(data, 0, header, MAX)
    assert len({len(columns.offsets), len(columns.timestamps), len(columns.keys), len(columns.values),
                len(columns.headers)}) == 1
    assert rows(columns) == [(offset, timestamp, key, value, list(found))
                             for offset, timestamp, key, value, found in iter_records(data, 0, header, MAX)]


@settings(max_examples=100, deadline=None)
@given(records, st.sampled_from(list(Compression)))
def test_same_records_as_kafka_python(items, compression):
    data = build(items, compression)
    assert rows(decode_batch(data, 0, parse_header(data, 0), MAX)) == kafka_python_records(data)


def test_a_batch_in_the_middle_of_a_buffer_and_offset_gaps():
    first = build([(0, b"k", b"v", [])], base_offset=7)
    builder = BatchBuilder(base_offset=100)
    builder.append(NOW, None, b"a")
    builder.append(NOW + 5, b"b", None, [("h", b"1")])
    second = builder.build()
    data = first + second
    columns = decode_batch(data, len(first), parse_header(data, len(first)), MAX)
    assert rows(columns) == [(100, NOW, None, b"a", []), (101, NOW + 5, b"b", None, [("h", b"1")])]


def test_slice_and_extend():
    columns = decode_batch(data := build([(i, b"k%d" % i, b"v%d" % i, []) for i in range(5)]), 0,
                           parse_header(data, 0), MAX)
    head, tail = columns.slice(0, 2), columns.slice(2)
    assert (len(head), len(tail)) == (2, 3)
    head.extend(tail)
    assert rows(head) == rows(columns)


def corrupted(data: bytes, position: int, byte: int) -> bytes:
    return data[:position] + bytes([byte]) + data[position + 1:]


@pytest.mark.parametrize("damage", [
    lambda data: data[:-3],                                    # truncated: records run past the end
    lambda data: corrupted(data, 61, 0x7F),                    # first record's length beyond the batch
    lambda data: data + b"\x00\x00",                           # bytes after the last record
    lambda data: corrupted(data, 61 + 4, 0x08),               # key length no longer matches the record
])
def test_malformed_batches_are_corrupt_message(damage):
    data = build([(0, b"key", b"value", []), (1, None, b"v", [("h", b"x")])])
    damaged = damage(data)
    header = parse_header(data, 0)._replace(batch_length=len(damaged) - 12)
    with pytest.raises(RecordsError, match="malformed record") as caught:
        decode_batch(damaged, 0, header, MAX)
    assert caught.value.code == 2  # CORRUPT_MESSAGE


def test_bad_headers_are_corrupt_message():
    builder = BatchBuilder()
    builder.append(NOW, None, b"v", [("é", b"x")])
    data = builder.build()
    name_at = data.index("é".encode())
    for damaged, reason in [(corrupted(data, name_at, 0xFF), "not UTF-8"),
                            (corrupted(data, name_at - 1, 0x01), "null header key")]:
        with pytest.raises(RecordsError, match=reason):
            decode_batch(damaged, 0, parse_header(damaged, 0), MAX)
