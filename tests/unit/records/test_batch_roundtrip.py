"""Property: any records encode with BatchBuilder and decode back identically, for every codec."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from gregor.records.batch import parse_header, scan_batches, validate_batch, verify_crc
from gregor.records.record import BatchBuilder, decode_records

from tests.unit.records.helpers import CODECS, MAX, build, gregor_tuples, records_strategy


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=80, deadline=None)
@given(records=records_strategy, base_offset=st.integers(0, 1 << 50), log_append=st.booleans(),
       producer=st.tuples(st.integers(-1, 1 << 40), st.integers(-1, 30000), st.integers(-1, (1 << 31) - 1)),
       leader_epoch=st.integers(-1, (1 << 31) - 1))
def test_built_batches_decode_to_what_went_in(codec, records, base_offset, log_append, producer, leader_epoch):
    producer_id, producer_epoch, base_sequence = producer
    data = build(records, codec, base_offset=base_offset, timestamp_type=int(log_append), producer_id=producer_id,
                 producer_epoch=producer_epoch, base_sequence=base_sequence, partition_leader_epoch=leader_epoch)
    header = parse_header(data)
    validate_batch(data, 0, header)
    assert verify_crc(data, 0, header) and header.size == len(data)
    assert (header.base_offset, header.partition_leader_epoch) == (base_offset, leader_epoch)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == producer
    assert (header.compression, header.timestamp_type) == (codec, int(log_append))
    assert (header.records_count, header.last_offset_delta, header.last_offset) == (
        len(records), len(records) - 1, base_offset + len(records) - 1)
    assert (header.base_timestamp, header.max_timestamp) == (records[0][0], max(r[0] for r in records))
    decoded = decode_records(data, 0, header, MAX)
    assert gregor_tuples(decoded) == [
        (base_offset + i, header.max_timestamp if log_append else ts, key, value, headers)
        for i, (ts, key, value, headers) in enumerate(records)]


@settings(max_examples=25, deadline=None)
@given(batches=st.lists(st.tuples(st.sampled_from(CODECS), records_strategy), min_size=1, max_size=5))
def test_a_run_of_batches_scans_and_decodes_batch_by_batch(batches):
    data = b""
    offset = 0
    expected = []
    for codec, records in batches:
        data += build(records, codec, base_offset=offset)
        expected += [(offset + i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(records)]
        offset += len(records)
    found, end = scan_batches(data)
    assert end == len(data) and len(found) == len(batches)
    decoded = []
    for header, pos in found:
        validate_batch(data, pos, header)
        decoded += decode_records(data, pos, header, MAX)
    assert gregor_tuples(decoded) == expected
    # A cut anywhere inside the last batch leaves the whole ones before it.
    cut, end = scan_batches(data[:-1])
    assert len(cut) == len(batches) - 1 and end == found[-1][1]


def test_estimated_size_of_an_uncompressed_batch_is_its_size():
    builder = BatchBuilder()
    for i in range(10):
        builder.append(1_000 + i, b"k", b"v" * i, [("h", None)])
    assert len(builder) == 10
    assert builder.estimated_size() == len(builder.build())


def test_a_null_timestamp_means_now():
    builder = BatchBuilder()
    builder.append(None, b"k", b"v")
    header = parse_header(builder.build())
    assert header.base_timestamp == header.max_timestamp > 1_600_000_000_000
