"""Conversion between legacy message sets and v2 batches.

Gregor stores only v2 batches (as Kafka 3+ does): Produce v0–v2 payloads are up-converted
before the append, and Fetch v0–v3 answers are down-converted from the stored batches.
"""

from __future__ import annotations

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import magic_of, scan_batches
from gregor.records.errors import RecordsError
from gregor.records.legacy import build_legacy, iter_legacy
from gregor.records.record import BatchBuilder, decode_records


def detect_magic(buf: bytes | memoryview) -> int:
    return magic_of(buf, 0)


def upconvert_to_v2(legacy: bytes | memoryview, max_uncompressed: int) -> bytes:
    records = list(iter_legacy(legacy, max_uncompressed))
    if not records:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "message set holds no complete message")
    timestamp_type = records[0].timestamp_type
    builder = BatchBuilder(compression=records[0].compression, timestamp_type=timestamp_type)
    for record in records:
        builder.append(record.timestamp, record.key, record.value)
    return builder.build()


def downconvert(data: bytes | memoryview, magic: int, max_uncompressed: int) -> bytes:
    """Stored v2 batches as a magic 0/1 message set; control batches are left out.

    A zstd batch cannot be down-converted (UNSUPPORTED_COMPRESSION_TYPE, as Kafka answers a fetch
    below v10); a LogAppendTime batch stays LogAppendTime in magic 1.
    """
    batches, _ = scan_batches(data)
    out = []
    for header, pos in batches:
        if header.is_control:
            continue
        records = decode_records(data, pos, header, max_uncompressed)
        if not records:
            continue
        entries = [(r.offset, r.timestamp, r.key, r.value) for r in records]
        out.append(build_legacy(entries, magic, header.compression, header.timestamp_type))
    return b"".join(out)
