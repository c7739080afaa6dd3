"""Individual records of a v2 batch: decoding (where semantics need it) and building batches.

The broker decodes records only to down-convert, compact or read control markers; clients and
tests build batches with BatchBuilder.
"""

from __future__ import annotations

import struct
import time
from typing import Iterable, Sequence

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.primitives import Reader
from gregor.records.batch import (
    BATCH_HEADER_SIZE, CONTROL_MASK, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, BatchHeader,
)
from gregor.records.compression import compress, decompress
from gregor.records.crc import crc32c
from gregor.records.errors import RecordsError

_HEADER = struct.Struct(">qiibIhiqqqhii")
_UINT32 = struct.Struct(">I")

Headers = Sequence[tuple[str, bytes | None]]


class Record:
    __slots__ = ("offset", "timestamp", "key", "value", "headers")

    def __init__(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
                 headers: list[tuple[str, bytes | None]]) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __repr__(self) -> str:
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")


def _int64(value: int) -> int:
    """`value` wrapped to a signed 64-bit integer, as Java's long arithmetic wraps: a base offset or
    timestamp plus its delta (and a timestamp minus the base) stay longs, so every writer of
    these fields (legacy down-conversion among them) can encode them."""
    return ((value + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def _varbytes(reader: Reader) -> bytes | None:
    size = reader.varint()
    if size < 0:
        return None
    start = reader._take(size)
    return bytes(reader.buf[start:start + size])


def decode_records(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader,
                   max_uncompressed_bytes: int) -> list[Record]:
    """All records of the batch at `pos`; any inconsistency is CORRUPT_MESSAGE."""
    body = memoryview(buf)[pos + BATCH_HEADER_SIZE:pos + header.size]
    if header.compression:
        body = memoryview(decompress(header.compression, body, max_uncompressed_bytes))
    reader = Reader(body)
    log_append = header.timestamp_type == 1
    records = []
    try:
        if header.records_count > len(body):
            raise DecodeError(f"{header.records_count} records cannot fit in {len(body)} bytes")
        for _ in range(header.records_count):
            length = reader.varint()
            end = reader.pos + length
            if length < 0 or end > reader.end:
                raise DecodeError("record length past the end of the batch")
            reader.int8()
            timestamp_delta = reader.varlong()
            offset_delta = reader.varint()
            key = _varbytes(reader)
            value = _varbytes(reader)
            header_count = reader.varint()
            if header_count < 0 or header_count > end - reader.pos:
                raise DecodeError(f"record claims {header_count} headers")
            headers = []
            for _ in range(header_count):
                name = _varbytes(reader)
                if name is None:
                    raise DecodeError("null header key")
                headers.append((name.decode("utf-8"), _varbytes(reader)))
            if reader.pos != end:
                raise DecodeError("record length does not match its fields")
            timestamp = header.max_timestamp if log_append else _int64(header.base_timestamp + timestamp_delta)
            records.append(Record(_int64(header.base_offset + offset_delta), timestamp, key, value, headers))
    except (DecodeError, UnicodeDecodeError) as error:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, f"malformed record: {error}") from None
    if reader.pos != reader.end:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "bytes after the last record of the batch")
    return records


def _zigzag_varint(out: bytearray, value: int) -> None:
    value = (value << 1) ^ (value >> 63)
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _varbytes_into(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1)
    else:
        _zigzag_varint(out, len(data))
        out += data


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Headers = ()) -> bytes:
    body = bytearray(b"\x00")
    _zigzag_varint(body, timestamp_delta)
    _zigzag_varint(body, offset_delta)
    _varbytes_into(body, key)
    _varbytes_into(body, value)
    _zigzag_varint(body, len(headers))
    for name, header_value in headers:
        _varbytes_into(body, name.encode("utf-8"))
        _varbytes_into(body, header_value)
    out = bytearray()
    _zigzag_varint(out, len(body))
    return bytes(out + body)


class BatchBuilder:
    """Accumulates records and encodes one v2 batch."""

    def __init__(self, compression: int = 0, timestamp_type: int = 0, base_offset: int = 0,
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 is_transactional: bool = False, is_control: bool = False,
                 partition_leader_epoch: int = -1) -> None:
        self.compression = compression
        self.timestamp_type = timestamp_type
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        self._records = bytearray()
        self._count = 0
        self._base_timestamp: int | None = None
        self._max_timestamp = -1

    def append(self, timestamp_ms: int | None, key: bytes | None, value: bytes | None,
               headers: Iterable[tuple[str, bytes | None]] = ()) -> int:
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        if self._base_timestamp is None:
            self._base_timestamp = timestamp_ms
        offset_delta = self._count
        self._records += encode_record(offset_delta, _int64(timestamp_ms - self._base_timestamp), key, value,
                                       tuple(headers))
        self._count += 1
        self._max_timestamp = max(self._max_timestamp, timestamp_ms)
        return offset_delta

    def __len__(self) -> int:
        return self._count

    def estimated_size(self) -> int:
        return BATCH_HEADER_SIZE + len(self._records)

    def build(self) -> bytes:
        records = compress(self.compression, bytes(self._records)) if self.compression else self._records
        attributes = self.compression
        if self.timestamp_type:
            attributes |= TIMESTAMP_TYPE_MASK
        if self.is_transactional:
            attributes |= TRANSACTIONAL_MASK
        if self.is_control:
            attributes |= CONTROL_MASK
        base_timestamp = self._base_timestamp if self._base_timestamp is not None else -1
        out = bytearray(_HEADER.pack(
            self.base_offset, BATCH_HEADER_SIZE - 12 + len(records), self.partition_leader_epoch, 2, 0,
            attributes, max(self._count - 1, 0), base_timestamp, self._max_timestamp,
            self.producer_id, self.producer_epoch, self.base_sequence, self._count,
        ))
        out += records
        _UINT32.pack_into(out, 17, crc32c(memoryview(out)[21:]))
        return bytes(out)


CONTROL_ABORT, CONTROL_COMMIT = 0, 1


def control_record_type(record: Record) -> int:
    """0 for an abort marker, 1 for a commit marker (key: version int16, type int16)."""
    if record.key is None or len(record.key) < 4:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "control record without a valid key")
    marker_type: int = struct.unpack_from(">hh", record.key)[1]
    return marker_type


_MARKER_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


def build_txn_marker(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                     timestamp_ms: int) -> bytes:
    """A COMMIT or ABORT marker batch as Kafka's transaction coordinator has it written: a
    transactional control batch of one record, key (version 0, type), value (version 0,
    coordinator epoch)."""
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=True,
                           is_control=True)
    builder.append(timestamp_ms, _MARKER_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT),
                   _MARKER_VALUE.pack(0, coordinator_epoch))
    return builder.build()


def txn_marker_of(record: Record) -> tuple[bool, int] | None:
    """(commit, coordinator epoch) of a COMMIT/ABORT control record; None for other control types
    (raft's). CORRUPT_MESSAGE when a marker's value is short."""
    marker_type = control_record_type(record)
    if marker_type not in (CONTROL_ABORT, CONTROL_COMMIT):
        return None
    if record.value is None or len(record.value) < _MARKER_VALUE.size:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "transaction marker without a valid value")
    return marker_type == CONTROL_COMMIT, _MARKER_VALUE.unpack_from(record.value)[1]
