"""Known answers from an implementation nobody here wrote: kafka-python's record builders, readers and codecs.

Batches kafka-python builds decode with Gregor to the same records, batches Gregor builds read back in
kafka-python identically with valid CRCs, and the codec bytes agree where they are deterministic.
"""

from __future__ import annotations

import struct

import kafka.codec as kafka_codec
import lz4.frame
import pytest
from hypothesis import given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import (
    parse_header, set_base_offset, set_log_append_time, set_partition_leader_epoch, validate_batch,
    verify_crc,
)
from gregor.records.compression import Compression, _xxh32, compress, decompress
from gregor.records.errors import RecordsError
from gregor.records.legacy import build_legacy, iter_legacy
from gregor.records.record import CONTROL_COMMIT, BatchBuilder, control_record_type, decode_records

from tests.unit.records.helpers import (
    CODECS, LEGACY_CODECS, MAX, NOW, build, decode_all, gregor_tuples, kafka_python_batches, kafka_python_records,
    legacy_records_strategy, records_strategy, xxh32,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def compressible(records):
    """Values long and repetitive enough that kafka-python keeps the codec (it falls back to none otherwise)."""
    return [(ts, key, (value or b"") + b"payload " * 40 if i == 0 else value, headers)
            for i, (ts, key, value, headers) in enumerate(records)]


def kafka_python_v2(records, codec, producer_id=-1, producer_epoch=-1, base_sequence=-1, transactional=False):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=1 << 24)
    for offset, (timestamp, key, value, headers) in enumerate(records):
        assert builder.append(offset, timestamp, key, value, headers) is not None
    return bytes(builder.build())


# -- v2: kafka-python builds, Gregor reads ----------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_v2_batch_with_headers_nulls_and_timestamps_decodes_identically(codec):
    records = [
        (NOW + 5, b"key-0", b"value " * 60, [("trace", b"abc"), ("empty", b""), ("null", None)]),
        (NOW, None, b"no key", []),
        (NOW + 999, b"tombstone", None, [("\u00fcnicode-\u00e9", b"\x00\xff")]),
        (NOW - 3, None, None, []),
        (NOW + 2, b"", b"", [("k", None), ("k", b"dup")]),
    ]
    data = kafka_python_v2(records, codec, producer_id=4242, producer_epoch=3, base_sequence=77, transactional=True)
    header = parse_header(data)
    assert header.compression == codec and header.is_transactional and not header.is_control
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4242, 3, 77)
    assert (header.records_count, header.last_offset_delta) == (5, 4)
    assert (header.base_timestamp, header.max_timestamp, header.timestamp_type) == (NOW + 5, NOW + 999, 0)
    assert gregor_tuples(decode_all(data)) == [
        (offset, ts, key, value, headers) for offset, (ts, key, value, headers) in enumerate(records)]
    assert gregor_tuples(decode_all(data)) == kafka_python_records(data)


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=15, deadline=None)
@given(records=records_strategy)
def test_any_kafka_python_v2_batch_decodes_like_kafka_python_reads_it(codec, records):
    data = kafka_python_v2(compressible(records), codec)
    assert parse_header(data).compression == codec
    assert gregor_tuples(decode_all(data)) == kafka_python_records(data)


# -- v2: Gregor builds, kafka-python reads ----------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=15, deadline=None)
@given(records=records_strategy, base_offset=st.integers(0, 1 << 40), leader_epoch=st.integers(-1, 1000),
       log_append=st.booleans())
def test_gregor_v2_batch_reads_identically_in_kafka_python(codec, records, base_offset, leader_epoch, log_append):
    data = build(records, codec, base_offset=base_offset, partition_leader_epoch=leader_epoch,
                 timestamp_type=int(log_append), producer_id=9, producer_epoch=1, base_sequence=100)
    ((batch, items),) = kafka_python_batches(data)
    header = parse_header(data)
    assert (batch.base_offset, batch.leader_epoch, batch.crc) == (base_offset, leader_epoch, header.crc)
    assert (batch.compression_type, batch.timestamp_type, batch.records_count) == (codec, int(log_append), len(records))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 100)
    assert (batch.first_timestamp, batch.max_timestamp) == (records[0][0], max(r[0] for r in records))
    assert batch.last_offset == base_offset + len(records) - 1
    expected = [(base_offset + i, batch.max_timestamp if log_append else ts, key, value, headers)
                for i, (ts, key, value, headers) in enumerate(records)]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in items] == expected
    assert gregor_tuples(decode_all(data)) == expected


def test_gregor_control_batch_is_a_commit_marker_for_kafka_python():
    builder = BatchBuilder(producer_id=12, producer_epoch=2, is_transactional=True, is_control=True, base_offset=50)
    builder.append(NOW, struct.pack(">hh", 0, CONTROL_COMMIT), struct.pack(">hi", 0, 7))
    data = builder.build()
    ((batch, (record,)),) = kafka_python_batches(data)
    assert batch.is_control_batch and batch.is_transactional
    assert record.commit and record.version == 0 and record.offset == 50
    (decoded,) = decode_all(data)
    assert control_record_type(decoded) == CONTROL_COMMIT


def test_several_gregor_batches_in_one_record_set():
    data = b"".join(build([(NOW + i, b"k%d" % i, b"v", [])], codec, base_offset=10 * i)
                    for i, codec in enumerate(CODECS))
    assert kafka_python_records(data) == gregor_tuples(decode_all(data)) == [
        (10 * i, NOW + i, b"k%d" % i, b"v", []) for i in range(len(CODECS))]


# -- header patching: base offset and leader epoch sit outside the CRC, log-append time inside ------------------

@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("builder", ["gregor", "kafka-python"])
def test_patched_offsets_and_epoch_keep_the_crc_and_kafka_python_sees_them(codec, builder):
    records = [(NOW + i, b"k", b"value %d " % i * 20, [("h", b"%d" % i)]) for i in range(4)]
    original = build(records, codec) if builder == "gregor" else kafka_python_v2(records, codec)
    before = bytes(original)
    other = build([(NOW, None, b"neighbour", [])])
    data = bytearray(other + original + other)
    pos = len(other)
    set_base_offset(data, pos, 1 << 33)
    set_partition_leader_epoch(data, pos, 17)
    assert data[pos + 16:] == before[16:] + other  # magic, CRC and everything it covers are untouched
    header = parse_header(data, pos)
    validate_batch(data, pos, header)
    batches = kafka_python_batches(bytes(data))
    batch, items = batches[1]
    assert (batch.base_offset, batch.leader_epoch) == (1 << 33, 17)
    assert [r.offset for r in items] == [(1 << 33) + i for i in range(4)]
    assert [r.timestamp for r in items] == [NOW + i for i in range(4)]
    assert [r.offset for r in decode_records(data, pos, header, MAX)] == [(1 << 33) + i for i in range(4)]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("builder", ["gregor", "kafka-python"])
def test_log_append_time_recomputes_the_crc_and_kafka_python_reads_the_broker_time(codec, builder):
    records = [(NOW + i, b"k", b"value %d " % i * 20, []) for i in range(3)]
    original = build(records, codec) if builder == "gregor" else kafka_python_v2(records, codec)
    other = build([(NOW, None, b"neighbour", [])])
    data = bytearray(other + original + other)
    pos = len(other)
    header = parse_header(data, pos)
    set_log_append_time(data, pos, header, NOW + 10_000)
    patched = parse_header(data, pos)
    assert patched.crc != header.crc and verify_crc(data, pos, patched)
    assert (patched.timestamp_type, patched.max_timestamp, patched.base_timestamp) == (1, NOW + 10_000, NOW)
    assert patched.compression == codec and data[:pos] == other and data[pos + header.size:] == other
    validate_batch(data, pos, patched)
    _, (batch, items), _ = kafka_python_batches(bytes(data))
    assert batch.timestamp_type == 1 and batch.crc == patched.crc
    assert [(r.timestamp, r.timestamp_type) for r in items] == [(NOW + 10_000, 1)] * 3
    assert [r.timestamp for r in decode_records(data, pos, patched, MAX)] == [NOW + 10_000] * 3


def test_a_patch_inside_the_crc_without_recomputing_it_is_caught_by_both():
    data = bytearray(build([(NOW, b"k", b"v", [])]))
    struct.pack_into(">q", data, 35, NOW + 1)  # maxTimestamp, covered by the CRC
    header = parse_header(data)
    with pytest.raises(RecordsError) as raised:
        validate_batch(data, 0, header)
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE
    assert not MemoryRecords(bytes(data)).next_batch().validate_crc()


# -- legacy message sets v0/v1 -----------------------------------------------------------------------------------

def kafka_python_legacy(records, magic, codec, first_offset=0):
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 24)
    for i, (timestamp, key, value) in enumerate(records):
        assert builder.append(first_offset + i, timestamp, key, value) is not None
    return bytes(builder.build())


def legacy_tuples(records) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value) for r in records]


def kafka_python_legacy_tuples(data) -> list[tuple]:
    """kafka-python reports no timestamp (None) for magic 0 where Kafka and Gregor say -1."""
    return [(r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value)
            for _, items in kafka_python_batches(data) for r in items]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(records=legacy_records_strategy)
def test_kafka_python_legacy_sets_decode_in_gregor(magic, codec, records):
    data = kafka_python_legacy(records, magic, codec)
    expected = [(i, ts if magic else -1, key, value) for i, (ts, key, value) in enumerate(records)]
    decoded = list(iter_legacy(data, MAX))
    # A producer's compressed v1 wrapper carries offset 0 (kafka-python, librdkafka): Kafka then takes the
    # inner offsets as they are instead of counting back from the wrapper.
    assert legacy_tuples(decoded) == expected
    assert {(r.magic, r.compression, r.timestamp_type) for r in decoded} == {(magic, codec, 0)}
    assert kafka_python_legacy_tuples(data) == expected


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [c for c in LEGACY_CODECS if c])
def test_broker_assigned_wrapper_offset_gives_absolute_inner_offsets_in_both(magic, codec):
    records = [(NOW + i, b"k%d" % i, b"value" * 30) for i in range(4)]
    # As a broker stores it: magic 1 inner offsets are relative (0..n-1) and the wrapper holds the last
    # absolute offset; magic 0 inner offsets are absolute already. The offset sits outside the CRC.
    data = bytearray(kafka_python_legacy(records, magic, codec, first_offset=0 if magic else 500))
    struct.pack_into(">q", data, 0, 503)
    expected = [(500 + i, ts if magic else -1, key, value) for i, (ts, key, value) in enumerate(records)]
    assert legacy_tuples(iter_legacy(bytes(data), MAX)) == expected
    assert kafka_python_legacy_tuples(bytes(data)) == expected


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(records=legacy_records_strategy, first=st.integers(0, 1 << 40))
def test_gregor_legacy_sets_read_identically_in_kafka_python(magic, codec, records, first):
    entries = [(first + i, ts, key, value) for i, (ts, key, value) in enumerate(records)]
    data = build_legacy(entries, magic, codec)
    expected = [(o, ts if magic else -1, key, value) for o, ts, key, value in entries]
    assert kafka_python_legacy_tuples(data) == expected
    assert legacy_tuples(iter_legacy(data, MAX)) == expected
    batches = kafka_python_batches(data)
    assert {batch.magic for batch, _ in batches} == {magic}
    assert {batch.compression_type for batch, _ in batches} == {codec}


# -- codec bytes -------------------------------------------------------------------------------------------------

payloads = st.one_of(st.binary(max_size=3000), st.binary(min_size=1, max_size=64).map(lambda b: b * 1500))


@settings(max_examples=40, deadline=None)
@given(data=payloads)
def test_snappy_xerial_framing_matches_kafka_python_byte_for_byte(data):
    ours = compress(Compression.SNAPPY, data)
    assert ours == kafka_codec.snappy_encode(data, xerial_compatible=True)
    if data:  # kafka-python's snappy_decode takes a bare 16-byte xerial header (no blocks) for raw snappy
        assert kafka_codec.snappy_decode(ours) == data
    assert decompress(Compression.SNAPPY, kafka_codec.snappy_encode(data, xerial_compatible=True), MAX) == data
    assert decompress(Compression.SNAPPY, kafka_codec.snappy_encode(data, xerial_compatible=False), MAX) == data


@settings(max_examples=40, deadline=None)
@given(data=payloads)
def test_lz4_frames_cross_decode(data):
    assert kafka_codec.lz4_decode(compress(Compression.LZ4, data)) == data
    assert decompress(Compression.LZ4, kafka_codec.lz4_encode(data), MAX) == data


@settings(max_examples=40, deadline=None)
@given(data=payloads)
def test_magic0_lz4_is_kafkas_old_framing_byte_for_byte(data):
    ours = compress(Compression.LZ4, data, magic=0)
    assert ours == kafka_codec.lz4_encode_old_kafka(data)
    assert kafka_codec.lz4_decode_old_kafka(ours) == data
    assert decompress(Compression.LZ4, kafka_codec.lz4_encode_old_kafka(data), MAX, magic=0) == data
    assert decompress(Compression.LZ4, ours, MAX, magic=0) == data


def test_magic0_lz4_header_checksum_is_the_broken_one():
    data = b"hello kafka 0.8 " * 100
    legacy = compress(Compression.LZ4, data, magic=0)
    flags = legacy[4]
    assert not flags & 0x08  # no content size: 0.8/0.9 readers refuse it
    assert legacy[6] == (xxh32(legacy[0:6]) >> 8) & 0xFF  # over magic + descriptor, not the descriptor alone
    assert legacy[6] != (xxh32(legacy[4:6]) >> 8) & 0xFF
    with pytest.raises(RuntimeError, match="headerChecksum"):
        lz4.frame.decompress(legacy)
    assert lz4.frame.decompress(compress(Compression.LZ4, data)) == data


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=80))
def test_xxh32_matches_liblz4(data):
    assert _xxh32(data) == xxh32(data)


def test_xxh32_known_answers():
    assert [_xxh32(s) for s in (b"", b"a", b"abc", b"Nobody inspects the spammish repetition")] == [
        0x02CC5D05, 0x550D7456, 0x32D153FF, 0xE2293B2F]


@settings(max_examples=40, deadline=None)
@given(data=payloads)
def test_gzip_cross_decodes(data):
    assert kafka_codec.gzip_decode(compress(Compression.GZIP, data)) == data
    assert decompress(Compression.GZIP, kafka_codec.gzip_encode(data), MAX) == data


@settings(max_examples=40, deadline=None)
@given(data=payloads)
def test_zstd_matches_kafka_python(data):
    ours = compress(Compression.ZSTD, data)
    assert ours == kafka_codec.zstd_encode(data)
    assert kafka_codec.zstd_decode(ours) == data
    assert decompress(Compression.ZSTD, kafka_codec.zstd_encode(data), MAX) == data


def test_concatenated_gzip_members_and_zstd_frames_read_whole_as_kafka_python_does():
    first, second = b"first member " * 10, b"second member " * 10
    gzip_pair = kafka_codec.gzip_encode(first) + kafka_codec.gzip_encode(second)
    zstd_pair = kafka_codec.zstd_encode(first) + kafka_codec.zstd_encode(second)
    assert kafka_codec.gzip_decode(gzip_pair) == decompress(Compression.GZIP, gzip_pair, MAX) == first + second
    assert kafka_codec.zstd_decode(zstd_pair) == decompress(Compression.ZSTD, zstd_pair, MAX) == first + second
