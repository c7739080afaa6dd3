"""Batch builders and checks shared by the storage tests."""

from __future__ import annotations

import os

from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records
from gregor.storage.log import Log

NOW = 1_700_000_000_000


def batch(count: int = 1, timestamp: int = NOW, value_size: int = 10, producer_id: int = -1,
          producer_epoch: int = -1, base_sequence: int = -1, tag: bytes = b"v",
          timestamps: list[int] | None = None) -> bytes:
    """One v2 batch of `count` records whose values start with `tag`."""
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence)
    for i in range(count):
        ts = timestamps[i] if timestamps is not None else timestamp
        builder.append(ts, None, tag + b"-%d-" % i + b"x" * value_size)
    return builder.build()


def records_of(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, value) of every record in `data`, a run of whole batches."""
    batches, end = scan_batches(data)
    assert end == len(data)
    out = []
    for header, pos in batches:
        out.extend((record.offset, record.value) for record in decode_records(data, pos, header, 1 << 26))
    return out


def index_is_consistent(log: Log) -> None:
    """Every offset-index entry names a real batch start with that base offset; time entries exist."""
    for segment in log.segments:
        starts = {position: header for position, header in segment.batches()}
        assert sum(h.size for h in starts.values()) == segment.size
        for offset, position in zip(segment.offset_index.offsets, segment.offset_index.positions):
            assert position in starts and starts[position].base_offset == offset
        offsets = {h.last_offset for h in starts.values()}
        for offset in segment.time_index.offsets:
            assert offset in offsets


def count_writes(monkeypatch) -> list[int]:
    """The size of every segment write from now on (`os.pwrite` as the segments call it)."""
    from gregor.storage import segment as segment_module

    sizes: list[int] = []
    pwrite = os.pwrite

    def counted(fd: int, data, offset: int) -> int:
        sizes.append(len(data))
        return pwrite(fd, data, offset)
    monkeypatch.setattr(segment_module.os, "pwrite", counted)
    return sizes
