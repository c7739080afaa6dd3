"""Corrupt input never escapes as anything but RecordsError, and lying batch headers are refused.

Hypothesis flips bits in, truncates and splices valid batches, legacy sets and compressed payloads; every
entry point then either returns the right answer (the damage landed where nothing is checked or read) or
raises RecordsError - never IndexError, struct.error, ValueError, MemoryError and the like.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import (
    BATCH_HEADER_SIZE, parse_header, scan_batches, validate_batch,
)
from gregor.records.compression import Compression, compress, decompress
from gregor.records.convert import downconvert, upconvert_to_v2
from gregor.records.crc import crc32c
from gregor.records.errors import RecordsError
from gregor.records.legacy import _entry, build_legacy, iter_legacy
from gregor.records.record import decode_records, encode_record

from tests.unit.records.helpers import CODECS, MAX, NOW, build

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

RECORDS = [
    (NOW, b"key-0", b"value " * 12, [("trace", b"abc"), ("null", None)]),
    (NOW + 7, None, b"second", []),
    (NOW - 2, b"k", None, [("\u00e9", b"")]),
    (NOW + 1, b"", b"last" * 9, []),
]
BATCHES = {codec: build(RECORDS, codec, base_offset=1000) for codec in CODECS}
LEGACY = {(magic, codec): build_legacy([(40 + i, NOW + i, key, value) for i, (_, key, value, _) in enumerate(RECORDS)],
                                       magic, codec)
          for magic in (0, 1) for codec in (0, 1, 2, 3)}


def relative(records) -> list[tuple]:
    """Records without the base offset, which is outside the CRC and free to change."""
    base = records[0].offset if records else 0
    return [(r.offset - base, r.timestamp, r.key, r.value, r.headers) for r in records]


EXPECTED = {codec: relative(decode_records(data, 0, parse_header(data), MAX)) for codec, data in BATCHES.items()}


@st.composite
def damaged(draw, data: bytes):
    """`data` with some bits flipped, or cut short, or with bytes spliced in; and the flipped positions."""
    kind = draw(st.sampled_from(["flip", "truncate", "splice", "overwrite"]))
    out = bytearray(data)
    touched: list[int] = []
    if kind == "flip":
        for _ in range(draw(st.integers(1, 3))):
            position = draw(st.integers(0, len(out) - 1))
            out[position] ^= 1 << draw(st.integers(0, 7))
            touched.append(position)
    elif kind == "truncate":
        del out[draw(st.integers(0, len(out) - 1)):]
    elif kind == "splice":
        position = draw(st.integers(0, len(out)))
        out[position:position] = draw(st.binary(min_size=1, max_size=8))
    else:
        position = draw(st.integers(0, len(out) - 1))
        value = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
        touched.append(position)
        out[position] = value
    return kind, touched, bytes(out)


def only_records_errors(call):
    try:
        return call()
    except RecordsError:
        return None


# -- v2 batches ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
@SETTINGS
@given(data=st.data())
def test_a_damaged_v2_batch_decodes_right_or_raises_records_error(codec, data):
    kind, touched, buf = data.draw(damaged(BATCHES[codec]))
    checked = None
    try:
        header = parse_header(buf)
        validate_batch(buf, 0, header)
        checked = relative(decode_records(buf, 0, header, MAX))
    except RecordsError:
        pass
    if checked is not None:
        # Only the base offset, batch length and leader epoch are outside the CRC; a changed length makes
        # the CRC cover other bytes. So what passes is the original, up to its base offset.
        assert checked == EXPECTED[codec]
    if kind == "flip" and buf != BATCHES[codec] and all(p >= 17 for p in touched):
        assert checked is None  # CRC32C catches every error of up to three bits at this length
    # Without the CRC check the decoder still only ever fails with RecordsError.
    only_records_errors(lambda: decode_records(buf, 0, parse_header(buf), MAX))
    only_records_errors(lambda: scan_batches(buf))
    only_records_errors(lambda: downconvert(buf, 0, MAX))
    only_records_errors(lambda: downconvert(buf, 1, MAX))


def reframe(records_section: bytes, codec: int, count: int) -> bytes:
    """A v2 batch with a correct header and CRC around an arbitrary (then compressed) records section."""
    payload = compress(codec, records_section) if codec else records_section
    header = bytearray(BATCHES[codec][:BATCH_HEADER_SIZE])
    struct.pack_into(">i", header, 8, BATCH_HEADER_SIZE - 12 + len(payload))
    struct.pack_into(">i", header, 23, count - 1)
    struct.pack_into(">i", header, 57, count)
    out = header + payload
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


RECORDS_SECTION = b"".join(encode_record(i, ts - NOW, key, value, headers)
                           for i, (ts, key, value, headers) in enumerate(RECORDS))


@pytest.mark.parametrize("codec", CODECS)
@SETTINGS
@given(data=st.data())
def test_damaged_records_under_a_valid_crc_raise_only_records_error(codec, data):
    """The CRC is right, so every check past it runs: record lengths, varints, header counts, UTF-8."""
    _, _, section = data.draw(damaged(RECORDS_SECTION))
    count = data.draw(st.sampled_from([len(RECORDS), len(RECORDS) - 1, len(RECORDS) + 1, 1]))
    buf = reframe(section, codec, count)
    header = parse_header(buf)
    records = only_records_errors(lambda: (validate_batch(buf, 0, header), decode_records(buf, 0, header, MAX))[1])
    if records is not None:
        assert len(records) == count
    only_records_errors(lambda: downconvert(buf, 1, MAX))


@SETTINGS
@given(buf=st.binary(max_size=200))
def test_random_bytes_raise_only_records_error(buf):
    for call in (lambda: scan_batches(buf), lambda: list(iter_legacy(buf, MAX)),
                 lambda: upconvert_to_v2(buf, MAX), lambda: downconvert(buf, 1, MAX)):
        only_records_errors(call)
    header = only_records_errors(lambda: parse_header(buf))
    if header is not None:
        only_records_errors(lambda: validate_batch(buf, 0, header))
        only_records_errors(lambda: decode_records(buf, 0, header, MAX))


# -- compressed payloads -----------------------------------------------------------------------------------------

PAYLOAD = b"".join(b"record %d of the payload; " % i for i in range(300))


@pytest.mark.parametrize("codec", [c for c in CODECS if c])
@pytest.mark.parametrize("magic", [0, 2])
@SETTINGS
@given(data=st.data())
def test_a_damaged_compressed_payload_decompresses_right_or_raises_records_error(codec, magic, data):
    compressed = compress(codec, PAYLOAD, magic)
    kind, _, buf = data.draw(damaged(compressed))
    result = only_records_errors(lambda: decompress(codec, buf, MAX, magic))
    if result is None or result == PAYLOAD:
        return
    # Kafka's snappy, lz4 and zstd streams carry no checksum of the data (the batch CRC guards it), so
    # a flipped literal comes out flipped. A cut must still be caught - except at a xerial block
    # boundary, which that framing cannot tell from the end of the stream.
    assert kind != "truncate" or (codec == Compression.SNAPPY and result == PAYLOAD[:len(result)]
                                  and len(result) % (32 * 1024) == 0), (kind, len(buf), len(compressed))
    assert codec != Compression.GZIP, kind  # gzip's CRC-32 and length trailer cover the data


@pytest.mark.parametrize("codec", [c for c in CODECS if c])
@SETTINGS
@given(buf=st.binary(max_size=120))
def test_random_bytes_never_crash_a_decompressor(codec, buf):
    only_records_errors(lambda: decompress(codec, buf, MAX))
    only_records_errors(lambda: decompress(codec, buf, MAX, 0))


@pytest.mark.parametrize("codec", [c for c in CODECS if c])
def test_truncated_compressed_payloads_are_refused(codec):
    compressed = compress(codec, PAYLOAD)
    for cut in range(len(compressed)):
        if codec == Compression.SNAPPY and cut == 16:
            continue  # a bare xerial header is a valid empty stream
        with pytest.raises(RecordsError):
            decompress(codec, compressed[:cut], MAX)


# -- legacy message sets -----------------------------------------------------------------------------------------

def legacy_view(records) -> list[tuple]:
    return [(r.timestamp, r.timestamp_type, r.key, r.value) for r in records]


@pytest.mark.parametrize("magic, codec", sorted(LEGACY))
@SETTINGS
@given(data=st.data())
def test_a_damaged_legacy_set_reads_a_prefix_of_the_original_or_raises_records_error(magic, codec, data):
    original = legacy_view(iter_legacy(LEGACY[(magic, codec)], MAX))
    _, _, buf = data.draw(damaged(LEGACY[(magic, codec)]))
    decoded = only_records_errors(lambda: list(iter_legacy(buf, MAX)))
    if decoded is not None:
        # Offsets and sizes sit outside each message's CRC; a size pushed past the end makes that
        # message the trailing partial one, which a reader leaves for the next fetch, as Kafka does.
        view = legacy_view(decoded)
        assert view == original[:len(view)]
    only_records_errors(lambda: upconvert_to_v2(buf, MAX))


def test_legacy_message_with_a_valid_crc_but_fields_past_its_end_is_refused():
    body = struct.pack(">bb", 1, 0) + struct.pack(">q", NOW) + struct.pack(">i", 50) + b"short"
    entry = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(RecordsError) as raised:
        list(iter_legacy(entry, MAX))
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("size", [-1, 0, 5])
def test_legacy_message_sizes_below_the_minimum_are_refused(size):
    entry = struct.pack(">qiI", 0, size, 0) + b"\x01\x00" + bytes(20)
    with pytest.raises(RecordsError):
        list(iter_legacy(entry, MAX))


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_magic_other_than_0_or_1_is_refused(magic):
    entry = bytearray(build_legacy([(0, NOW, b"k", b"v")], magic))
    entry[16] = 2
    entry[12:16] = struct.pack(">I", zlib.crc32(entry[16:]))
    with pytest.raises(RecordsError):
        list(iter_legacy(bytes(entry), MAX))


def test_compressed_wrapper_with_a_null_value_is_refused():
    with pytest.raises(RecordsError) as raised:
        list(iter_legacy(_entry(0, 1, Compression.GZIP, NOW, None, None), MAX))
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_compressed_wrapper_with_no_inner_message_is_refused(magic, codec):
    """Kafka: 'Found invalid compressed record set with no inner records'."""
    wrapper = _entry(0, magic, codec, NOW, None, compress(codec, b"", magic))
    valid = build_legacy([(0, NOW, b"k", b"v")], magic)
    for data in (wrapper, valid + wrapper):
        with pytest.raises(RecordsError) as raised:
            list(iter_legacy(data, MAX))
        assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


def test_magic1_wrapper_offset_below_its_last_inner_offset_is_refused():
    """Kafka refuses a non-zero wrapper offset smaller than the last relative inner offset."""
    inner = build_legacy([(i, NOW, b"k", b"v") for i in range(4)], 1)
    wrapper = _entry(2, 1, Compression.GZIP, NOW, None, compress(Compression.GZIP, inner))
    with pytest.raises(RecordsError) as raised:
        list(iter_legacy(wrapper, MAX))
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_is_not_a_legacy_codec(magic):
    """Kafka allows zstd only in magic 2 batches (produce v7+, fetch v10+)."""
    wrapper = _entry(0, magic, Compression.ZSTD, NOW, None,
                     compress(Compression.ZSTD, build_legacy([(0, NOW, b"k", b"v")], magic)))
    with pytest.raises(RecordsError) as raised:
        list(iter_legacy(wrapper, MAX))
    assert raised.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    zstd_batch = build([(NOW, b"k", b"v" * 50, [])], Compression.ZSTD)
    with pytest.raises(RecordsError) as raised:
        downconvert(zstd_batch, magic, MAX)
    assert raised.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


# -- v2 headers that lie -------------------------------------------------------------------------------------------

def with_fields(data: bytes, **fields) -> bytes:
    """`data` with header fields replaced and the CRC recomputed (a liar that checks its own sums)."""
    offsets = {"batch_length": (8, ">i"), "attributes": (21, ">h"), "last_offset_delta": (23, ">i"),
               "records_count": (57, ">i")}
    out = bytearray(data)
    for name, value in fields.items():
        position, fmt = offsets[name]
        struct.pack_into(fmt, out, position, value)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def refusal(data: bytes) -> RecordsError:
    with pytest.raises(RecordsError) as raised:
        header = parse_header(data)
        validate_batch(data, 0, header)
        decode_records(data, 0, header, MAX)
    return raised.value


@pytest.mark.parametrize("codec", CODECS)
def test_records_count_larger_than_the_records_is_refused(codec):
    assert refusal(with_fields(BATCHES[codec], records_count=5, last_offset_delta=4)).code == \
        ErrorCode.CORRUPT_MESSAGE
    assert refusal(with_fields(BATCHES[codec], records_count=1 << 30, last_offset_delta=(1 << 30) - 1)).code == \
        ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", CODECS)
def test_records_count_smaller_than_the_records_is_refused(codec):
    assert refusal(with_fields(BATCHES[codec], records_count=3, last_offset_delta=2)).code == \
        ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("count", [0, -1, -(1 << 31)])
def test_records_count_zero_or_negative_is_refused_as_kafka_does(codec, count):
    assert refusal(with_fields(BATCHES[codec], records_count=count, last_offset_delta=0)).code == \
        ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("delta", [-1, 0, 2, 4, 1 << 30])
def test_last_offset_delta_inconsistent_with_the_count_is_refused(codec, delta):
    assert refusal(with_fields(BATCHES[codec], last_offset_delta=delta)).code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("length", [-1, -(1 << 31), 0, 48, 60, 1 << 30])
def test_batch_length_past_the_buffer_or_below_the_header_is_refused(codec, length):
    data = BATCHES[codec]
    lying = bytearray(data)
    struct.pack_into(">i", lying, 8, length)
    assert refusal(bytes(lying)).code == ErrorCode.CORRUPT_MESSAGE
    if length < BATCH_HEADER_SIZE - 12:
        with pytest.raises(RecordsError):
            scan_batches(bytes(lying))


@pytest.mark.parametrize("length", [-1, -100, 0, 48])
def test_batch_length_below_the_header_is_refused_even_when_the_crc_field_agrees(length):
    """A length below 49 leaves the CRC over an empty (or negative) range: CRC32C of nothing is 0."""
    data = bytearray(BATCHES[Compression.GZIP])
    struct.pack_into(">i", data, 8, length)
    struct.pack_into(">I", data, 17, 0)
    header = parse_header(data)
    with pytest.raises(RecordsError) as raised:
        validate_batch(data, 0, header)
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_refused(codec):
    data = with_fields(BATCHES[Compression.NONE], attributes=codec)
    assert refusal(data).code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


@pytest.mark.parametrize("magic", [0, 1, 3, -1])
def test_wrong_magic_is_refused_by_parse_header(magic):
    data = bytearray(BATCHES[Compression.NONE])
    data[16] = magic & 0xFF
    with pytest.raises(RecordsError):
        parse_header(bytes(data))


def test_bytes_after_the_last_record_are_refused():
    data = reframe(RECORDS_SECTION + b"\x00", Compression.NONE, len(RECORDS))
    assert refusal(data).code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("length", [-1, -5, 10_000])
def test_record_length_negative_or_past_the_batch_end_is_refused(length):
    record = encode_record(0, 0, b"k", b"v")
    assert record[0] == 2 * (len(record) - 1)  # a one-byte zigzag varint length, then the record
    zigzag = (length << 1) ^ (length >> 63)
    prefix = bytearray()
    while zigzag > 0x7F:
        prefix.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    prefix.append(zigzag)
    section = bytes(prefix) + record[1:]
    assert refusal(reframe(section, Compression.NONE, 1)).code == ErrorCode.CORRUPT_MESSAGE


def test_null_header_key_and_bad_utf8_header_key_are_refused():
    null_key = encode_record(0, 0, b"k", b"v", [("h", b"x")]).replace(b"\x02h", b"\x01")
    fixed = bytearray(null_key)
    fixed[0] -= 2  # the record lost one byte
    assert refusal(reframe(bytes(fixed), Compression.NONE, 1)).code == ErrorCode.CORRUPT_MESSAGE
    bad_utf8 = encode_record(0, 0, b"k", b"v", [("h", b"x")]).replace(b"\x02h", b"\x02\xff")
    assert refusal(reframe(bad_utf8, Compression.NONE, 1)).code == ErrorCode.CORRUPT_MESSAGE
