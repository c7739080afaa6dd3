"""Decoding the records of a v2 batch on the consumer's hot path.

`gregor.records.decode_records` reads through a general primitives reader; here the loop is
flat, with a one-byte fast path for the varints (nearly every length and delta in a batch is
below 64), since decoding is most of what a Python consumer spends per record. Malformed input
raises the same CORRUPT_MESSAGE RecordsError.
"""

from __future__ import annotations

from typing import Iterator

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import BATCH_HEADER_SIZE, BatchHeader
from gregor.records.compression import decompress
from gregor.records.errors import RecordsError

Header = tuple[str, "bytes | None"]


class Truncated(Exception):
    """A varint or field runs past the end of the batch's records."""


def corrupt_record(header: BatchHeader, reason: str) -> RecordsError:
    return RecordsError(ErrorCode.CORRUPT_MESSAGE,
                        f"malformed record in the batch at offset {header.base_offset}: {reason}")


def batch_data(buf: bytes | memoryview, pos: int, header: BatchHeader, max_uncompressed_bytes: int) -> bytes:
    """The records part of the batch at `pos`, decompressed (bounded by `max_uncompressed_bytes`)."""
    body = memoryview(buf)[pos + BATCH_HEADER_SIZE:pos + header.size]
    return bytes(decompress(header.compression, body, max_uncompressed_bytes)) if header.compression else bytes(body)


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    """A zigzag varint of any length (the slow path): (value, position after it)."""
    end = len(data)
    shift = result = 0
    while True:
        if position >= end or shift > 63:
            raise Truncated()
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), position
        shift += 7


def read_headers(data: bytes, position: int, count: int) -> tuple[list[Header], int]:
    """`count` record headers from `position` (rare enough to take the slow varint path).
    ValueError for a null header key; UnicodeDecodeError for a name that is not UTF-8."""
    headers: list[Header] = []
    for _ in range(count):
        size, position = read_varint(data, position)
        if size < 0:
            raise ValueError("null header key")
        name = data[position:position + size].decode("utf-8")
        position += size
        size, position = read_varint(data, position)
        if size < 0:
            headers.append((name, None))
        else:
            headers.append((name, data[position:position + size]))
            position += size
    return headers, position


def iter_records(buf: bytes | memoryview, pos: int, header: BatchHeader, max_uncompressed_bytes: int
                 ) -> Iterator[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    """(offset, timestamp, key, value, headers) of each record of the batch at `pos`."""
    data = batch_data(buf, pos, header, max_uncompressed_bytes)
    end = len(data)
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    log_append_time = header.max_timestamp if header.timestamp_type == 1 else None
    position = 0
    try:
        for _ in range(header.records_count):
            byte = data[position]
            if byte < 0x80:
                length, position = (byte >> 1) ^ -(byte & 1), position + 1
            else:
                length, position = read_varint(data, position)
            record_end = position + length
            if length < 0 or record_end > end:
                raise corrupt_record(header, "record length past the end of the batch")
            position += 1  # attributes
            byte = data[position]
            if byte < 0x80:
                timestamp_delta, position = (byte >> 1) ^ -(byte & 1), position + 1
            else:
                timestamp_delta, position = read_varint(data, position)
            byte = data[position]
            if byte < 0x80:
                offset_delta, position = (byte >> 1) ^ -(byte & 1), position + 1
            else:
                offset_delta, position = read_varint(data, position)
            byte = data[position]
            if byte < 0x80:
                size, position = (byte >> 1) ^ -(byte & 1), position + 1
            else:
                size, position = read_varint(data, position)
            if size < 0:
                key = None
            else:
                key = data[position:position + size]
                position += size
            byte = data[position]
            if byte < 0x80:
                size, position = (byte >> 1) ^ -(byte & 1), position + 1
            else:
                size, position = read_varint(data, position)
            if size < 0:
                value = None
            else:
                value = data[position:position + size]
                position += size
            byte = data[position]
            if byte < 0x80:
                count, position = (byte >> 1) ^ -(byte & 1), position + 1
            else:
                count, position = read_varint(data, position)
            headers: list[Header] = []
            if count:
                if count < 0 or count > record_end - position:
                    raise corrupt_record(header, f"record claims {count} headers")
                headers, position = read_headers(data, position, count)
            if position != record_end:
                raise corrupt_record(header, "record length does not match its fields")
            yield (base_offset + offset_delta,
                   log_append_time if log_append_time is not None else base_timestamp + timestamp_delta,
                   key, value, headers)
    except (Truncated, IndexError):
        raise corrupt_record(header, "truncated record") from None
    except UnicodeDecodeError:
        raise corrupt_record(header, "header name is not UTF-8") from None
    except ValueError as error:
        raise corrupt_record(header, str(error)) from None
    if position != end:
        raise corrupt_record(header, "bytes after the last record of the batch")
