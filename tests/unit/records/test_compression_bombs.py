"""Compression bombs are refused, not expanded.

Every payload here is small and expands to 64 MiB (or claims to); decompression is bounded by a 1 MiB
limit. Each refusal must be CORRUPT_MESSAGE and must not allocate the output: tracemalloc's peak while
decompressing stays within a few times the limit (the whole output would be 64 times it).
"""

from __future__ import annotations

import functools
import struct
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.primitives import uvarint_bytes as uvarint
from gregor.records.batch import parse_header, validate_batch
from gregor.records.compression import XERIAL_MAGIC, Compression, compress, decompress
from gregor.records.convert import downconvert, upconvert_to_v2
from gregor.records.crc import crc32c
from gregor.records.errors import RecordsError
from gregor.records.legacy import _entry, build_legacy, iter_legacy
from gregor.records.record import decode_records

from tests.unit.records.helpers import COMPRESSED, MAX, NOW, build, xxh32

MIB = 1 << 20
BOMB = 64 * MIB
PEAK_LIMIT = 4 * MAX


def bounded(call):
    """Run `call`, expecting a CORRUPT_MESSAGE refusal; return tracemalloc's peak during it."""
    tracemalloc.start()
    try:
        with pytest.raises(RecordsError) as raised:
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE, raised.value
    return peak


def zeros_in_chunks(total: int = BOMB):
    chunk = bytes(MIB)
    for _ in range(total // MIB):
        yield chunk


@functools.cache
def gzip_bomb() -> bytes:
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(deflater.compress(chunk) for chunk in zeros_in_chunks()) + deflater.flush()


@functools.cache
def lz4_bomb(source_size: int = 0) -> bytes:
    compressor = lz4.frame.LZ4FrameCompressor(block_linked=False)
    parts = [compressor.begin(source_size=source_size)]
    parts.extend(compressor.compress(chunk) for chunk in zeros_in_chunks())
    return b"".join(parts) + compressor.flush()


@functools.cache
def zstd_bomb(declared: int = -1) -> bytes:
    compressor = zstandard.ZstdCompressor(level=3).compressobj(size=declared)
    return b"".join(compressor.compress(chunk) for chunk in zeros_in_chunks()) + compressor.flush()


@functools.cache
def xerial_bomb() -> bytes:
    block = bytes(cramjam.snappy.compress_raw(bytes(MIB)))
    return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(block)) + block) * (BOMB // MIB)


def snappy_raw(declared: int, copies: int) -> bytes:
    """Raw snappy by hand: one literal zero byte, then `copies` 64-byte copies at offset 1."""
    return uvarint(declared) + b"\x00\x00" + b"\xfe\x01\x00" * copies


def bomb(codec: int) -> bytes:
    return {Compression.GZIP: gzip_bomb, Compression.SNAPPY: xerial_bomb, Compression.LZ4: lz4_bomb,
            Compression.ZSTD: zstd_bomb}[codec]()


def with_content_size(frame: bytes, size: int) -> bytes:
    """An lz4 frame without a content size, given one (and a header checksum that matches it)."""
    assert not frame[4] & 0x08
    descriptor = bytes([frame[4] | 0x08, frame[5]]) + struct.pack("<Q", size)
    return frame[:4] + descriptor + bytes([(xxh32(descriptor) >> 8) & 0xFF]) + frame[7:]


def test_bombs_are_small():
    for codec in COMPRESSED:
        assert len(bomb(codec)) < 4 * MIB
    assert len(snappy_raw(BOMB, BOMB // 64)) < 4 * MIB


@pytest.mark.parametrize("codec", COMPRESSED)
def test_the_limit_is_exact(codec):
    assert decompress(codec, compress(codec, bytes(MAX)), MAX) == bytes(MAX)
    with pytest.raises(RecordsError) as raised:
        decompress(codec, compress(codec, bytes(MAX + 1)), MAX)
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE
    assert str(MAX) in str(raised.value)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_a_bomb_is_refused_without_allocating_its_output(codec):
    data = bomb(codec)  # made before tracing: only the decompression's memory is measured
    assert bounded(lambda: decompress(codec, data, MAX)) < PEAK_LIMIT


def test_a_legacy_lz4_bomb_is_refused_too():
    legacy = compress(Compression.LZ4, b"x", magic=0)
    frame = lz4_bomb()
    legacy_bomb = legacy[:7] + frame[7:]  # legacy header (same flags) in front of the bomb's blocks
    assert legacy[4:6] == frame[4:6]
    assert bounded(lambda: decompress(Compression.LZ4, legacy_bomb, MAX, magic=0)) < PEAK_LIMIT


# -- snappy: the raw length preamble and the xerial block lengths can lie ----------------------------------------

def test_handmade_raw_snappy_decodes_as_cramjam_does():
    raw = snappy_raw(1 + 64 * 10, 10)
    assert bytes(cramjam.snappy.decompress_raw(raw)) == bytes(641)
    assert decompress(Compression.SNAPPY, raw, MAX) == bytes(641)


def test_raw_snappy_declaring_a_huge_length_is_refused_before_allocating():
    honest = snappy_raw(1 + BOMB, BOMB // 64)
    assert bounded(lambda: decompress(Compression.SNAPPY, honest, MAX)) < PEAK_LIMIT
    lying_big = uvarint(0xFFFFFFFF) + b"\x00\x00"
    assert bounded(lambda: decompress(Compression.SNAPPY, lying_big, MAX)) < MAX // 8


def test_raw_snappy_whose_preamble_understates_its_output_is_refused():
    lying_small = snappy_raw(1000, BOMB // 64)
    assert bounded(lambda: decompress(Compression.SNAPPY, lying_small, MAX)) < PEAK_LIMIT


def test_raw_snappy_preamble_longer_than_five_bytes_is_refused():
    bounded(lambda: decompress(Compression.SNAPPY, b"\x80" * 6 + b"\x00", MAX))


def xerial(*blocks: bytes, lengths=None) -> bytes:
    lengths = lengths or [len(b) for b in blocks]
    return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"".join(
        struct.pack(">i", n) + b for n, b in zip(lengths, blocks))


@pytest.mark.parametrize("length", [-1, -(1 << 31), 1 << 30, 100])
def test_xerial_block_lengths_that_lie_are_refused(length):
    block = bytes(cramjam.snappy.compress_raw(b"abc" * 100))
    assert decompress(Compression.SNAPPY, xerial(block, block), MAX) == b"abc" * 200
    bounded(lambda: decompress(Compression.SNAPPY, xerial(block, block, lengths=[len(block), length]), MAX))


def test_xerial_block_whose_preamble_passes_the_remaining_budget_is_refused():
    half = bytes(cramjam.snappy.compress_raw(bytes(MAX // 2 + 1)))
    data = xerial(half, half)
    peak = bounded(lambda: decompress(Compression.SNAPPY, data, MAX))
    assert peak < PEAK_LIMIT


def test_truncated_xerial_streams_are_refused():
    data = compress(Compression.SNAPPY, bytes(range(256)) * 300)
    for cut in (10, 15, 18, 21, len(data) - 1):
        bounded(lambda: decompress(Compression.SNAPPY, data[:cut], MAX))


# -- lz4 and zstd: declared content sizes --------------------------------------------------------------------------

def test_lz4_frame_understating_its_content_size_is_refused():
    data = with_content_size(lz4_bomb(), 100)
    assert bounded(lambda: decompress(Compression.LZ4, data, MAX)) < PEAK_LIMIT


def test_lz4_frame_overstating_its_content_size_is_refused_without_allocating_it():
    small = lz4.frame.compress(b"tiny" * 10, store_size=False)
    assert decompress(Compression.LZ4, with_content_size(small, 40), MAX) == b"tiny" * 10
    data = with_content_size(small, 1 << 62)
    assert bounded(lambda: decompress(Compression.LZ4, data, MAX)) < MAX // 8


def test_lz4_frame_declaring_its_true_huge_size_is_refused():
    data = lz4_bomb(BOMB)
    assert bounded(lambda: decompress(Compression.LZ4, data, MAX)) < PEAK_LIMIT


def test_zstd_frame_declaring_its_true_huge_size_is_refused():
    frame = zstd_bomb(BOMB)
    assert zstandard.frame_content_size(frame) == BOMB
    assert bounded(lambda: decompress(Compression.ZSTD, frame, MAX)) < PEAK_LIMIT


def zstd_raw_frame(content: bytes, declared: int) -> bytes:
    """A zstd frame by hand: 8-byte content size field, a 2 MiB window, one raw last block."""
    header = struct.pack("<IBB", 0xFD2FB528, 0xC0, 0x58) + struct.pack("<Q", declared)
    block = (1 | (len(content) << 3)).to_bytes(3, "little")
    return header + block + content


def test_zstd_frame_overstating_its_content_size_is_refused_without_allocating_it():
    assert decompress(Compression.ZSTD, zstd_raw_frame(b"tiny", 4), MAX) == b"tiny"
    assert zstandard.ZstdDecompressor().decompress(zstd_raw_frame(b"tiny", 4)) == b"tiny"
    data = zstd_raw_frame(b"tiny", 1 << 50)
    assert bounded(lambda: decompress(Compression.ZSTD, data, MAX)) < MAX // 8


# -- bombs inside batches and message sets -------------------------------------------------------------------------

def v2_batch_around(codec: int, payload: bytes, count: int = 1) -> bytes:
    """A v2 batch whose (compressed) records section is `payload`, with a valid CRC."""
    data = bytearray(build([(NOW, None, b"x", [])] * count, codec))
    header = data[:61]
    struct.pack_into(">i", header, 8, 49 + len(payload))
    out = header + payload
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_a_v2_batch_holding_a_bomb_passes_the_header_checks_and_is_refused_on_decode(codec):
    data = v2_batch_around(codec, bomb(codec))
    header = parse_header(data)
    validate_batch(data, 0, header)  # the hot path never decompresses
    # A decoder may copy its (small) input once; it must not build the (large) output.
    assert bounded(lambda: decode_records(data, 0, header, MAX)) < len(data) + PEAK_LIMIT
    assert bounded(lambda: downconvert(data, 1, MAX)) < len(data) + PEAK_LIMIT


def legacy_wrapper(magic: int, codec: int, compressed: bytes, offset: int = 0) -> bytes:
    return _entry(offset, magic, codec, NOW, None, compressed)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_a_legacy_wrapper_holding_a_bomb_is_refused(magic, codec):
    payload = bomb(codec)
    if magic == 0 and codec == Compression.LZ4:
        legacy = compress(Compression.LZ4, b"x", magic=0)
        payload = legacy[:7] + payload[7:]
    data = legacy_wrapper(magic, codec, payload)
    assert bounded(lambda: list(iter_legacy(data, MAX))) < len(data) + PEAK_LIMIT
    assert bounded(lambda: upconvert_to_v2(data, MAX)) < len(data) + PEAK_LIMIT


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("outer", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_a_compressed_wrapper_inside_a_compressed_wrapper_is_refused_unexpanded(magic, outer):
    """Kafka: 'Inner messages must not be compressed' - so the inner bomb is never opened."""
    inner_wrapper = legacy_wrapper(magic, Compression.GZIP, gzip_bomb())
    nested = legacy_wrapper(magic, outer, compress(outer, inner_wrapper, magic), offset=5)
    peak = bounded(lambda: list(iter_legacy(nested, MAX)))
    assert peak < MAX // 2  # the outer layer opens to a few KiB; opening the inner bomb would pass MAX
    bounded(lambda: upconvert_to_v2(nested, MAX))


def test_nested_wrapper_of_harmless_records_is_refused_too():
    inner = build_legacy([(0, NOW, b"k", b"v"), (1, NOW, b"k", b"v")], 1, Compression.GZIP)
    nested = legacy_wrapper(1, Compression.GZIP, compress(Compression.GZIP, inner), offset=1)
    with pytest.raises(RecordsError) as raised:
        list(iter_legacy(nested, MAX))
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE
