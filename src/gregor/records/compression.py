"""Compression codecs of Kafka record batches, with bounded decompression.

Every decompressor stops as soon as its output would pass `max_size`, so a small compressed
payload cannot make the broker allocate gigabytes (a compression bomb is refused, not expanded).
Snappy arrives either raw (librdkafka) or in the xerial framing the Java client writes; lz4 in
the frame format, or for magic 0 with the pre-KIP-57 header checksum Kafka once wrote.
"""

from __future__ import annotations

import enum
import gzip
import io
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from gregor.protocol.error_codes import ErrorCode
from gregor.records.errors import RecordsError

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = struct.Struct(">i")
_XERIAL_BLOCK_SIZE = 32 * 1024
_CHUNK = 64 * 1024


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def _too_large(max_size: int) -> RecordsError:
    return RecordsError(ErrorCode.CORRUPT_MESSAGE,
                        f"decompressed records exceed the {max_size}-byte limit")


def _corrupt(codec: str, error: Exception) -> RecordsError:
    return RecordsError(ErrorCode.CORRUPT_MESSAGE, f"invalid {codec} data: {error}")


def compress(codec: int, data: bytes, magic: int = 2, level: int | None = None) -> bytes:
    """`data` compressed with `codec`; `level` is the codec's level (None: Kafka's default)."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return gzip.compress(data, compresslevel=6 if level is None or level < 0 else level)
    if codec == Compression.SNAPPY:
        return _xerial_compress(data)
    if codec == Compression.LZ4:
        # Kafka 0.8/0.9 readers of magic 0 refuse a frame that carries its content size.
        framed = lz4.frame.compress(bytes(data), block_linked=False, content_checksum=False, store_size=magic != 0,
                                    compression_level=0 if level is None else level)
        return _to_legacy_lz4(framed) if magic == 0 else framed
    if codec == Compression.ZSTD:
        return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
    raise RecordsError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes | memoryview, max_size: int, magic: int = 2) -> bytes:
    try:
        if codec == Compression.GZIP:
            return _inflate(data, max_size)
        if codec == Compression.SNAPPY:
            return _snappy_decompress(bytes(data), max_size)
        if codec == Compression.LZ4:
            payload = _from_legacy_lz4(bytes(data)) if magic == 0 else bytes(data)
            return _lz4_decompress(payload, max_size)
        if codec == Compression.ZSTD:
            return _zstd_decompress(data, max_size)
    except RecordsError:
        raise
    except Exception as error:  # noqa: BLE001 - each codec library raises its own types
        raise _corrupt(Compression(codec).name.lower(), error) from None
    if codec == Compression.NONE:
        return bytes(data)
    raise RecordsError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {codec}")


def _inflate(data: bytes | memoryview, max_size: int) -> bytes:
    """Every gzip member, as Java's GZIPInputStream reads them; a cut stream is corrupt."""
    out = bytearray()
    while True:
        inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header, auto-detected
        out += inflater.decompress(data, max_size + 1 - len(out))
        if len(out) > max_size:
            raise _too_large(max_size)
        if not inflater.eof:
            raise _corrupt("gzip", ValueError("truncated stream"))
        data = inflater.unused_data
        if not data.startswith(b"\x1f\x8b"):  # trailing bytes that are no member are ignored, as in Java
            return bytes(out)


def _zstd_decompress(data: bytes | memoryview, max_size: int) -> bytes:
    data = bytes(data)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    out = bytearray()
    while True:
        chunk = reader.read(_CHUNK)
        if not chunk:
            break
        out += chunk
        if len(out) > max_size:
            raise _too_large(max_size)
    # The stream reader ends quietly on a cut frame. Now that the output is known to fit, check that
    # every frame is whole.
    if not data:
        raise _corrupt("zstd", ValueError("no frame"))
    while data:
        frame = zstandard.ZstdDecompressor().decompressobj()
        frame.decompress(data)
        if not frame.eof:
            raise _corrupt("zstd", ValueError("truncated frame"))
        data = frame.unused_data
    return bytes(out)


def _lz4_decompress(data: bytes, max_size: int) -> bytes:
    decompressor = lz4.frame.LZ4FrameDecompressor()
    out = bytearray()
    remaining = data
    while not decompressor.eof:
        chunk = decompressor.decompress(remaining, max_length=_CHUNK)
        remaining = b""
        out += chunk
        if len(out) > max_size:
            raise _too_large(max_size)
        if not chunk and decompressor.needs_input and not decompressor.eof:
            raise _corrupt("lz4", ValueError("truncated frame"))
    return bytes(out)


def _snappy_raw_length(data: bytes) -> int:
    length = 0
    shift = 0
    for index in range(min(5, len(data))):
        byte = data[index]
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return length
        shift += 7
    raise _corrupt("snappy", ValueError("bad length preamble"))


def _snappy_block(data: bytes, max_size: int, already: int = 0) -> bytes:
    if already + _snappy_raw_length(data) > max_size:
        raise _too_large(max_size)
    return bytes(cramjam.snappy.decompress_raw(data))


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return _snappy_block(data, max_size)
    if len(data) < _XERIAL_HEADER.size:
        raise _corrupt("snappy", ValueError("truncated xerial header"))
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        if pos + 4 > len(data):
            raise _corrupt("snappy", ValueError("truncated xerial block length"))
        (size,) = _XERIAL_BLOCK.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise _corrupt("snappy", ValueError("xerial block longer than the data"))
        out += _snappy_block(data[pos:pos + size], max_size, len(out))
        pos += size
    return bytes(out)


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1))
    view = memoryview(data)
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + _XERIAL_BLOCK_SIZE]))
        out += _XERIAL_BLOCK.pack(len(block))
        out += block
    return bytes(out)


def _frame_descriptor_end(data: bytes) -> int:
    """Offset of the header-checksum byte of an lz4 frame (after magic, FLG, BD, options)."""
    flags = data[4]
    end = 6
    if flags & 0x08:
        end += 8  # content size
    if flags & 0x01:
        end += 4  # dictionary id
    return end


def _lz4_header_checksum(descriptor: bytes) -> int:
    return (_xxh32(descriptor) >> 8) & 0xFF


def _to_legacy_lz4(framed: bytes) -> bytes:
    """Rewrite the frame's header checksum the way Kafka's magic-0 writer computed it."""
    end = _frame_descriptor_end(framed)
    checksum = _lz4_header_checksum(framed[0:end])
    return framed[:end] + bytes([checksum]) + framed[end + 1:]


def _from_legacy_lz4(data: bytes) -> bytes:
    """Restore the standard header checksum (over the descriptor only) of a magic-0 frame."""
    if len(data) < 7:
        raise _corrupt("lz4", ValueError("truncated frame header"))
    end = _frame_descriptor_end(data)
    if len(data) <= end:
        raise _corrupt("lz4", ValueError("truncated frame header"))
    checksum = _lz4_header_checksum(data[4:end])
    return data[:end] + bytes([checksum]) + data[end + 1:]


_PRIME1, _PRIME2, _PRIME3, _PRIME4, _PRIME5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_MASK = 0xFFFFFFFF


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of a short input (an lz4 frame descriptor: at most 15 bytes)."""
    length = len(data)
    pos = 0
    if length >= 16:
        v = [(seed + _PRIME1 + _PRIME2) & _MASK, (seed + _PRIME2) & _MASK, seed, (seed - _PRIME1) & _MASK]
        while pos + 16 <= length:
            for lane in range(4):
                (word,) = struct.unpack_from("<I", data, pos)
                v[lane] = (_rotl((v[lane] + word * _PRIME2) & _MASK, 13) * _PRIME1) & _MASK
                pos += 4
        acc = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK
    else:
        acc = (seed + _PRIME5) & _MASK
    acc = (acc + length) & _MASK
    while pos + 4 <= length:
        (word,) = struct.unpack_from("<I", data, pos)
        acc = (_rotl((acc + word * _PRIME3) & _MASK, 17) * _PRIME4) & _MASK
        pos += 4
    while pos < length:
        acc = (_rotl((acc + data[pos] * _PRIME5) & _MASK, 11) * _PRIME1) & _MASK
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _PRIME2) & _MASK
    acc ^= acc >> 13
    acc = (acc * _PRIME3) & _MASK
    acc ^= acc >> 16
    return acc
