"""The decoder of `poll`'s records against the per-record decoder (itself checked against
kafka-python) on random batches (every codec, null keys and values, headers, long varints,
log-append time, leader epochs) and on batches of one shape (the regular-expression path), and
its refusal of malformed batches."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from gregor.client.consumer.poll_decoder import batch_records, decode_consumer_records
from gregor.client.consumer.record_decoder import batch_data, iter_records
from gregor.client.consumer.records import ConsumerRecord
from gregor.client.consumer.uniform_batch import uniform_records
from gregor.records.batch import parse_header
from gregor.records.compression import Compression
from gregor.records.errors import RecordsError
from gregor.records.record import BatchBuilder
from tests.unit.client.test_batch_decoder import MAX, NOW, corrupted, records

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def build(items, compression: int = 0, base_offset: int = 0, timestamp_type: int = 0, epoch: int = -1) -> bytes:
    builder = BatchBuilder(compression=compression, base_offset=base_offset, timestamp_type=timestamp_type,
                           partition_leader_epoch=epoch)
    for delta, key, value, record_headers in items:
        builder.append(NOW + delta, key, value, record_headers)
    return builder.build()


@settings(max_examples=150, deadline=None)
@given(records, st.sampled_from(list(Compression)), st.integers(0, 1 << 50), st.sampled_from([0, 1]),
       st.sampled_from([-1, 0, 7]))
def test_same_records_as_the_per_record_decoder(items, compression, base_offset, timestamp_type, epoch):
    data = build(items, compression, base_offset, timestamp_type, epoch)
    header = parse_header(data, 0)
    decoded = decode_consumer_records(data, 0, header, MAX, "t", 3)
    assert [(record.offset, record.timestamp, record.key, record.value, record.headers) for record in decoded] == \
        [(offset, timestamp, key, value, list(found)) for offset, timestamp, key, value, found
         in iter_records(data, 0, header, MAX)]
    for record in decoded:
        assert (record.topic, record.partition, record.timestamp_type) == ("t", 3, timestamp_type)
        assert record.leader_epoch == (None if epoch < 0 else epoch)
        assert record.serialized_key_size == (-1 if record.key is None else len(record.key))
        assert record.serialized_value_size == (-1 if record.value is None else len(record.value))


def test_every_slot_of_a_record_is_set():
    data = build([(0, b"k", b"v", [("h", b"1")])], epoch=4)
    record, = decode_consumer_records(data, 0, parse_header(data, 0), MAX, "t", 2)
    assert {name: getattr(record, name) for name in ConsumerRecord.__slots__} == {
        "topic": "t", "partition": 2, "offset": 0, "timestamp": NOW, "timestamp_type": 0, "key": b"k",
        "value": b"v", "_headers": [("h", b"1")], "leader_epoch": 4, "serialized_key_size": 1,
        "serialized_value_size": 1}


def test_a_record_without_headers_gets_its_own_list_when_read():
    data = build([(0, None, b"a", []), (1, None, b"b", [])])
    first, second = decode_consumer_records(data, 0, parse_header(data, 0), MAX, "t", 0)
    first.headers.append(("h", b"1"))
    assert first.headers == [("h", b"1")] and second.headers == []


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
        decode_consumer_records(damaged, 0, header, MAX, "t", 0)
    assert caught.value.code == 2  # CORRUPT_MESSAGE


def test_bad_headers_are_corrupt_message():
    builder = BatchBuilder()
    builder.append(NOW, None, b"v", [("é", b"x")])
    data = builder.build()
    name_at = data.index("é".encode())
    for damaged, reason in [(corrupted(data, name_at, 0xFF), "not UTF-8"),
                            (corrupted(data, name_at - 1, 0x01), "null header key")]:
        with pytest.raises(RecordsError, match=reason):
            decode_consumer_records(damaged, 0, parse_header(damaged, 0), MAX, "t", 0)


# -- batches of one shape (null keys, no headers, values of one size), split by uniform_batch --

uniform_batches = st.tuples(st.integers(8, 60), st.sampled_from([0, 1, 63, 64, 100, 8191, 9000]),
                            st.lists(st.integers(-4000, 4000), min_size=1, max_size=60) | st.lists(
                                st.integers(-(1 << 20), 1 << 20), min_size=1, max_size=60))


@settings(max_examples=80, deadline=None)
@given(uniform_batches, st.sampled_from(list(Compression)), st.integers(0, 1 << 50), st.sampled_from([0, 1]))
def test_a_uniform_batch_decodes_as_the_per_record_decoder_reads_it(shape, compression, base_offset,
                                                                     timestamp_type):
    count, size, deltas = shape
    items = [(deltas[index % len(deltas)], None, bytes([index % 256]) * size, []) for index in range(count)]
    data = build(items, compression, base_offset, timestamp_type, epoch=2)
    header = parse_header(data, 0)
    decoded = decode_consumer_records(data, 0, header, MAX, "t", 1)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers, r.serialized_value_size, r.leader_epoch)
            for r in decoded] == [(offset, timestamp, None, value, [], size, 2) for offset, timestamp, _, value, _
                                  in iter_records(data, 0, header, MAX)]
    if size <= 100 and all(-4000 <= delta <= 4000 for delta in deltas):  # varints of one or two bytes
        assert uniform_records(batch_data(data, 0, header, MAX), header, "t", 1) is not None


def test_the_uniform_path_takes_its_shape_and_leaves_other_batches_to_the_loop():
    for late in (5, 9_000, 1 << 40):  # timestamp deltas of one, two and many varint bytes
        items = [(late if index == 7 else index, None, b"v%03d" % index, []) for index in range(20)]
        data = build(items)
        uniform = uniform_records(batch_data(data, 0, parse_header(data, 0), MAX), parse_header(data, 0), "t", 0)
        assert uniform is not None
        assert [(r.offset, r.timestamp, r.value) for r in uniform.take(20)] == \
            [(index, NOW + delta, value) for index, (delta, _, value, _) in enumerate(items)]
    for odd_one in [(5, b"k", b"v005", []), (5, None, b"v5", []), (5, None, b"v005", [("h", b"1")])]:
        items = [(index, None, b"v%03d" % index, []) for index in range(20)]
        items[5] = odd_one
        data = build(items)
        header = parse_header(data, 0)
        assert uniform_records(batch_data(data, 0, header, MAX), header, "t", 0) is None
        assert [(r.key, r.value, r.timestamp) for r in decode_consumer_records(data, 0, header, MAX, "t", 0)] == \
            [(key, value, NOW + delta) for delta, key, value, _ in items]


def test_a_uniform_batch_with_a_wrong_record_length_is_corrupt_message():
    data = bytearray(build([(index, None, b"x" * 10, []) for index in range(12)]))
    first_length = 61
    data[first_length] += 2  # the first record claims one byte more (zigzag)
    header = parse_header(bytes(data), 0)
    with pytest.raises(RecordsError, match="malformed record"):
        decode_consumer_records(bytes(data), 0, header, MAX, "t", 0)


# -- records built take by take, as poll hands them over --

def fields(record: ConsumerRecord) -> tuple:
    return tuple(getattr(record, name) for name in ConsumerRecord.__slots__)


@settings(max_examples=60, deadline=None)
@given(records | uniform_batches.map(lambda shape: [(shape[2][index % len(shape[2])], None, b"u" * shape[1], [])
                                                     for index in range(shape[0])]),
       st.sampled_from(list(Compression)), st.lists(st.integers(1, 30), min_size=1, max_size=5))
def test_a_batch_taken_in_parts_gives_the_records_decoded_at_once(items, compression, limits):
    """`poll` builds a batch's records as it hands them over; the parts, in order, are the batch."""
    data = build(items, compression, epoch=1)
    header = parse_header(data, 0)
    parts = batch_records(data, 0, header, MAX, "t", 0)
    taken, turn = [], 0
    while parts.remaining:
        part = parts.take(limits[turn % len(limits)])
        assert 0 < len(part) <= limits[turn % len(limits)]
        taken += part
        turn += 1
    assert parts.take(5) == []
    assert [fields(record) for record in taken] == \
        [fields(record) for record in decode_consumer_records(data, 0, header, MAX, "t", 0)]


@pytest.mark.parametrize("key", [b"k", None])  # the general loop, and the one-shape path's refusal
def test_a_malformed_record_is_raised_when_a_take_reaches_it(key):
    data = build([(index, key, b"value", []) for index in range(12)])
    damaged = data[:-3]
    header = parse_header(data, 0)._replace(batch_length=len(damaged) - 12)
    parts = batch_records(damaged, 0, header, MAX, "t", 0)
    assert [record.offset for record in parts.take(5) + parts.take(5)] == list(range(10))
    with pytest.raises(RecordsError, match="malformed record"):
        parts.take(5)


def test_a_uniform_batch_with_offset_gaps_keeps_its_offsets():
    """Compaction leaves gaps between offset deltas; the one-shape path reads each delta then."""
    builder = BatchBuilder(base_offset=1000)
    for index in range(40):
        builder._count += index % 3  # the records compaction removed (a test-only shortcut)
        builder.append(NOW + index, None, b"v%03d" % index)
    data = bytearray(builder.build())
    struct.pack_into(">i", data, 57, 40)  # the batch's record count: the records it holds
    data = bytes(data)
    header = parse_header(data, 0)
    assert uniform_records(batch_data(data, 0, header, MAX), header, "t", 0) is not None
    parts = batch_records(data, 0, header, MAX, "t", 0)
    assert [record.offset for record in parts.take(15) + parts.take(30)] == \
        [offset for offset, *_ in iter_records(data, 0, header, MAX)]
