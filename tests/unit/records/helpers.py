"""Shared pieces of the records tests: record strategies, kafka-python as a reader, an xxh32 oracle."""

from __future__ import annotations

import lz4.frame
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from gregor.records.compression import Compression
from gregor.records.batch import scan_batches, validate_batch
from gregor.records.record import BatchBuilder, decode_records

MAX = 1 << 20
CODECS = list(Compression)
COMPRESSED = [codec for codec in Compression if codec]
# kafka-python's LegacyRecordBatchBuilder knows none, gzip, snappy and lz4; Kafka forbids zstd below magic 2.
LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
NOW = 1_700_000_000_000


def xxh32(data: bytes) -> int:
    """xxHash32 (seed 0) as the lz4 C library computes it: the content checksum of an lz4 frame."""
    return int.from_bytes(lz4.frame.compress(bytes(data), content_checksum=True)[-4:], "little")


class _Xxh32Digest:
    def __init__(self, data: bytes) -> None:
        self.value = xxh32(data)

    def digest(self) -> bytes:
        return self.value.to_bytes(4, "big")


class XxhashShim:
    """What kafka.codec needs of the `xxhash` package (absent here) for its 0.8/0.9 lz4 framing."""

    xxh32 = _Xxh32Digest


def kafka_python_batches(data: bytes) -> list:
    """kafka-python's view of a record set: one (batch, records) per batch, every CRC checked."""
    records = MemoryRecords(bytes(data))
    out = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        items = list(batch)
        for record in items:
            assert record.validate_crc()
        out.append((batch, items))
    return out


def kafka_python_records(data: bytes) -> list[tuple]:
    """(offset, timestamp, key, value, headers) of every record kafka-python reads in `data`."""
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers))
            for _, items in kafka_python_batches(data) for r in items]


def gregor_tuples(records) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


def decode_all(data: bytes) -> list:
    """Every record of a run of whole v2 batches, each batch validated first."""
    batches, end = scan_batches(data)
    assert end == len(data)
    out = []
    for header, pos in batches:
        validate_batch(data, pos, header)
        out.extend(decode_records(data, pos, header, MAX))
    return out


def build(records, compression: int = 0, **kwargs) -> bytes:
    """A Gregor v2 batch of (timestamp, key, value, headers)."""
    builder = BatchBuilder(compression=compression, **kwargs)
    for timestamp, key, value, headers in records:
        builder.append(timestamp, key, value, headers)
    return builder.build()


maybe_bytes = st.one_of(st.none(), st.binary(max_size=40), st.sampled_from([b"", b"x" * 300]))
header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=12)))
timestamps = st.integers(0, 1 << 45)
records_strategy = st.lists(
    st.tuples(timestamps, maybe_bytes, maybe_bytes, st.lists(header, max_size=3)), min_size=1, max_size=12)
legacy_records_strategy = st.lists(st.tuples(timestamps, maybe_bytes, maybe_bytes), min_size=1, max_size=10)
