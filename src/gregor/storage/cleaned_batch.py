"""What the cleaner writes for a v2 batch that lost records, as Kafka's MemoryRecords.filterTo does.

- Some records kept: a new batch with the same base offset, last offset delta (so the producer's
  last sequence survives), partition leader epoch, attributes (codec, timestamp type,
  transactional and control flags), producer id, epoch and base sequence. The kept records keep
  their offsets, timestamps, keys, values and headers, and are compressed again with the batch's
  codec. The base timestamp becomes the first kept record's, the max timestamp the largest kept
  one (for LogAppendTime, every record carries the append time, so it stays).
- A batch with a delete horizon (KIP-534: attribute bit 0x40) carries it in the base timestamp
  instead, record timestamps being deltas from it; readers decode them unchanged.
- No record kept, but the batch carries its producer's last sequence: an empty batch with that
  header, no records and no codec (Kafka's writeEmptyHeader), so the producer state rebuilt from
  the log still knows the sequence.
"""

from __future__ import annotations

import struct
from typing import Sequence

from gregor.records.batch import (
    ATTRIBUTES_OFFSET, COMPRESSION_MASK, CRC_OFFSET, MAGIC_V2, MIN_BATCH_LENGTH, NO_TIMESTAMP, BatchHeader,
)
from gregor.records.compression import compress
from gregor.records.crc import crc32c
from gregor.records.record import Record, encode_record

DELETE_HORIZON_MASK = 0x40
_HEADER = struct.Struct(">qiibIhiqqqhii")
_UINT32 = struct.Struct(">I")


def _batch(header: BatchHeader, attributes: int, base_timestamp: int, max_timestamp: int, count: int,
           body: bytes | bytearray) -> bytes:
    out = bytearray(_HEADER.pack(
        header.base_offset, MIN_BATCH_LENGTH + len(body), header.partition_leader_epoch, MAGIC_V2, 0,
        attributes, header.last_offset_delta, base_timestamp, max_timestamp, header.producer_id,
        header.producer_epoch, header.base_sequence, count))
    out += body
    _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def delete_horizon(header: BatchHeader) -> int | None:
    """When the batch's tombstones may go (KIP-534), if a cleaning has set that."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_MASK else None


def rebuilt_batch(header: BatchHeader, kept: Sequence[Record], horizon_ms: int | None) -> bytes:
    """The batch of `header` holding only `kept` (non-empty, in offset order), with `horizon_ms`
    as its delete horizon when not None."""
    attributes = header.attributes & ~DELETE_HORIZON_MASK
    if horizon_ms is None:
        base_timestamp = kept[0].timestamp
    else:
        base_timestamp = horizon_ms
        attributes |= DELETE_HORIZON_MASK
    body = bytearray()
    for record in kept:
        body += encode_record(record.offset - header.base_offset, record.timestamp - base_timestamp,
                              record.key, record.value, record.headers)
    payload = compress(header.compression, bytes(body)) if header.compression else body
    return _batch(header, attributes, base_timestamp, max(r.timestamp for r in kept), len(kept), payload)


def empty_batch(header: BatchHeader) -> bytes:
    """The batch of `header` with no records, kept for its producer id, epoch and sequences."""
    attributes = header.attributes & ~(COMPRESSION_MASK | DELETE_HORIZON_MASK)
    return _batch(header, attributes, NO_TIMESTAMP, header.max_timestamp, 0, b"")
