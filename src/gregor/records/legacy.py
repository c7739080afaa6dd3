"""Legacy message sets, magic 0 and 1: read (old producers) and write (old fetchers).

Entry layout: offset int64, size int32, crc uint32 (CRC-32 over magic..end), magic int8,
attributes int8, [timestamp int64 when magic 1], key bytes, value bytes. A compressed entry's
value is itself a message set; magic 1 wrappers number inner messages relatively and carry the
absolute offset of the last one, magic 0 wrappers carry absolute inner offsets.
"""

from __future__ import annotations

import struct
import zlib
from typing import Iterable, Iterator, NamedTuple

from gregor.protocol.error_codes import ErrorCode
from gregor.records.compression import compress, decompress
from gregor.records.errors import RecordsError

_ENTRY = struct.Struct(">qiIbb")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
ENTRY_OVERHEAD = 12
TIMESTAMP_TYPE_MASK = 0x08
ZSTD = 4


class LegacyRecord(NamedTuple):
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    magic: int
    compression: int


def _corrupt(message: str) -> RecordsError:
    return RecordsError(ErrorCode.CORRUPT_MESSAGE, message)


def _read_bytes(buf: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise _corrupt("truncated length in legacy message")
    (size,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if size < 0:
        return None, pos
    if pos + size > end:
        raise _corrupt("legacy message field longer than the message")
    return bytes(buf[pos:pos + size]), pos + size


def iter_legacy(data: bytes | memoryview, max_uncompressed: int, depth: int = 0) -> Iterator[LegacyRecord]:
    """Every message of a v0/v1 set, wrappers expanded; a trailing partial entry is ignored."""
    buf = memoryview(data)
    pos = 0
    while len(buf) - pos >= ENTRY_OVERHEAD:
        offset, size, crc, magic, attributes = _ENTRY.unpack_from(buf, pos) if len(buf) - pos >= 18 else \
            (*struct.unpack_from(">qi", buf, pos), 0, -1, 0)
        end = pos + ENTRY_OVERHEAD + size
        if size < 6 or end > len(buf):
            if end > len(buf) and size >= 6:
                return
            raise _corrupt(f"legacy message size {size} is invalid")
        if magic not in (0, 1):
            raise _corrupt(f"legacy message magic {magic}")
        if zlib.crc32(buf[pos + 16:end]) != crc:
            raise _corrupt(f"legacy message at offset {offset} fails its CRC")
        cursor = pos + 18
        timestamp, timestamp_type = -1, 0
        if magic == 1:
            if cursor + 8 > end:
                raise _corrupt("truncated legacy timestamp")
            (timestamp,) = _INT64.unpack_from(buf, cursor)
            cursor += 8
            timestamp_type = 1 if attributes & TIMESTAMP_TYPE_MASK else 0
        key, cursor = _read_bytes(buf, cursor, end)
        value, cursor = _read_bytes(buf, cursor, end)
        codec = attributes & 0x07
        if codec == 0:
            yield LegacyRecord(offset, timestamp, timestamp_type, key, value, magic, 0)
        else:
            if depth > 0 or value is None:
                raise _corrupt("nested or empty compressed legacy message")
            if codec == ZSTD:
                raise RecordsError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                                   "zstd is allowed only in record batches of magic 2")
            inner = list(iter_legacy(decompress(codec, value, max_uncompressed, magic), max_uncompressed, 1))
            if not inner:
                raise _corrupt("compressed legacy message with no inner message")
            # Magic 1 inner offsets count from the wrapper's, the last absolute offset; a producer's
            # wrapper offset 0 (librdkafka, kafka-python) leaves them as they are, as in Kafka.
            last_inner = inner[-1].offset
            if magic == 1 and 0 < offset < last_inner:
                raise _corrupt(f"wrapper offset {offset} is below its last inner offset {last_inner}")
            base = offset - last_inner if magic == 1 and offset else 0
            for record in inner:
                absolute = base + record.offset
                stamp = timestamp if timestamp_type == 1 else record.timestamp
                yield LegacyRecord(absolute, stamp, timestamp_type, record.key, record.value, magic, codec)
        pos = end


def _entry(offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None,
           value: bytes | None) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += _INT64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(field)) + field
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


def build_legacy(records: Iterable[tuple[int, int, bytes | None, bytes | None]], magic: int,
                 compression: int = 0, timestamp_type: int = 0) -> bytes:
    """A v0/v1 message set of (offset, timestamp, key, value); compressed into one wrapper if asked.

    `timestamp_type` 1 (LogAppendTime, magic 1 only) marks every message and the wrapper as Kafka does.
    """
    records = list(records)
    if compression == ZSTD:
        raise RecordsError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd is allowed only in record batches of magic 2")
    flag = TIMESTAMP_TYPE_MASK if magic == 1 and timestamp_type == 1 else 0
    if not compression:
        return b"".join(_entry(o, magic, flag, t, k, v) for o, t, k, v in records)
    base = records[0][0]
    inner = b"".join(
        _entry(o - base if magic == 1 else o, magic, flag, t, k, v) for o, t, k, v in records)
    wrapper_timestamp = max((t for _, t, _, _ in records), default=-1)
    return _entry(records[-1][0], magic, compression | flag, wrapper_timestamp, None,
                  compress(compression, inner, magic))
