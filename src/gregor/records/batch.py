"""Record batch v2 (magic 2) headers: parse, validate and patch without touching records.

The broker's hot path lives here: one struct unpack and one C-speed CRC32C per batch, offsets
and leader epoch patched in place (both sit outside the CRC). Layout, as Kafka's
DefaultRecordBatch: baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
crc uint32 (over attributes..end), attributes int16, lastOffsetDelta int32, baseTimestamp
int64, maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32,
recordsCount int32, then the records.
"""

from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from gregor.protocol.error_codes import ErrorCode
from gregor.records.crc import crc32c
from gregor.records.errors import RecordsError

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12
MAGIC_V2 = 2
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
RECORDS_COUNT_OFFSET = 57
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
NO_TIMESTAMP = -1

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; sequences wrap at int32 max as in Kafka."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % 0x80000000


def magic_of(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The magic byte of the entry at `pos` (same place in v0, v1 and v2)."""
    if len(buf) - pos < 17:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "record set shorter than a batch header")
    return buf[pos + 16]


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "record batch shorter than its 61-byte header")
    header = BatchHeader._make(_HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC_V2:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, f"record batch magic {header.magic}, expected 2")
    return header


def scan_batches(buf: bytes | bytearray | memoryview, pos: int = 0,
                 end: int | None = None) -> tuple[list[tuple[BatchHeader, int]], int]:
    """Complete batches from `pos`, and the position where the complete ones end.

    A trailing partial batch is not an error here (recovery truncates it; a produce request
    rejects it); a length field that cannot be a batch is.
    """
    end = len(buf) if end is None else end
    batches = []
    while end - pos >= LOG_OVERHEAD:
        _, batch_length = _PREFIX.unpack_from(buf, pos)
        if batch_length < MIN_BATCH_LENGTH:
            raise RecordsError(ErrorCode.CORRUPT_MESSAGE,
                               f"record batch length {batch_length} at position {pos} is below the minimum")
        if pos + LOG_OVERHEAD + batch_length > end:
            break
        batches.append((parse_header(buf, pos), pos))
        pos += LOG_OVERHEAD + batch_length
    return batches, pos


def iter_batches(buf: bytes | bytearray | memoryview, pos: int = 0,
                 end: int | None = None) -> Iterator[tuple[BatchHeader, int]]:
    batches, _ = scan_batches(buf, pos, end)
    return iter(batches)


def verify_crc(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bool:
    view = memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + header.size]
    return crc32c(view) == header.crc


def validate_batch(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    """Reject a batch whose CRC, counts or offsets cannot be right (no per-record work)."""
    if header.batch_length < MIN_BATCH_LENGTH:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE,
                           f"record batch length {header.batch_length} is below the minimum")
    if pos + header.size > len(buf):
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "record batch extends past the end of the data")
    if not verify_crc(buf, pos, header):
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, f"record batch at position {pos} fails its CRC32C")
    count = header.records_count
    if count <= 0 and not header.is_control:
        raise RecordsError(ErrorCode.INVALID_RECORD, f"record batch claims {count} records")
    if header.compression == 0 and count > header.batch_length - MIN_BATCH_LENGTH:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE,
                           f"record batch claims {count} records in {header.batch_length} bytes")
    if header.last_offset_delta != count - 1:
        raise RecordsError(ErrorCode.INVALID_RECORD,
                           f"lastOffsetDelta {header.last_offset_delta} does not match {count} records")
    if header.compression > 4:
        raise RecordsError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                           f"unknown compression codec {header.compression}")


def set_base_offset(buf: bytearray | memoryview, pos: int, offset: int) -> None:
    _INT64.pack_into(buf, pos, offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    _INT32.pack_into(buf, pos + 12, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, header: BatchHeader, timestamp_ms: int) -> None:
    """Mark the batch LogAppendTime with the broker's clock, as Kafka's validator does."""
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    view = memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + header.size]
    _UINT32.pack_into(buf, pos + CRC_OFFSET, crc32c(view))
