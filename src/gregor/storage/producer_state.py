"""Idempotent-producer state of a partition: epochs and the last five batches per producer.

Rules as Kafka's ProducerStateManager: a retried batch (same producer, epoch and sequence range
as one of the last five) is a duplicate answered with its original offsets; a sequence gap is
OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH; a new epoch starts at
sequence 0. A producer this partition has never seen (or whose state expired) may start at any
sequence, as in Kafka since KIP-360.

Snapshots (`<offset>.snapshot`) hold the state as of an offset: version int16, crc32 of the
rest, producer count int32, then per producer id int64, epoch int16, batch count int8 and per
batch first/last sequence int32, first/last offset int64, timestamp int64.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass, field

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import BatchHeader
from gregor.storage.errors import StorageError

CACHED_BATCHES = 5
SNAPSHOT_SUFFIX = ".snapshot"
_SNAPSHOT_HEADER = struct.Struct(">hIi")
_PRODUCER = struct.Struct(">qhb")
_BATCH = struct.Struct(">iiqqq")
_SNAPSHOT_VERSION = 1


@dataclass(frozen=True)
class BatchMetadata:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: list[BatchMetadata] = field(default_factory=list)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


def _next_sequence(sequence: int) -> int:
    return 0 if sequence == 0x7FFFFFFF else sequence + 1


class ProducerStateManager:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """The original batch when `header` is a duplicate; raises on a sequence or epoch error."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise StorageError(ErrorCode.INVALID_PRODUCER_EPOCH,
                               f"producer {header.producer_id} epoch {header.producer_epoch} is older "
                               f"than {entry.epoch}")
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise StorageError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                   f"new epoch {header.producer_epoch} of producer {header.producer_id} "
                                   f"starts at sequence {header.base_sequence}, not 0")
            return None
        for batch in entry.batches:
            if batch.first_sequence == header.base_sequence and batch.last_sequence == header.last_sequence:
                return batch
        if entry.batches and header.base_sequence != _next_sequence(entry.last_sequence):
            raise StorageError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                               f"producer {header.producer_id} sent sequence {header.base_sequence}, "
                               f"expected {_next_sequence(entry.last_sequence)}")
        return None

    def update(self, header: BatchHeader, first_offset: int) -> None:
        """Record an appended batch (also used to replay the log after a snapshot)."""
        if header.producer_id < 0:
            return
        entry = self.producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = self.producers[header.producer_id] = ProducerEntry(header.producer_epoch)
        if header.base_sequence < 0:
            return
        entry.batches.append(BatchMetadata(header.base_sequence, header.last_sequence, first_offset,
                                           first_offset + header.last_offset_delta, header.max_timestamp))
        del entry.batches[:-CACHED_BATCHES]

    def truncate(self) -> None:
        self.producers.clear()

    # -- snapshots

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")

    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for name in os.listdir(self.directory):
            if name.endswith(SNAPSHOT_SUFFIX) and name[:-len(SNAPSHOT_SUFFIX)].isdigit():
                offsets.append(int(name[:-len(SNAPSHOT_SUFFIX)]))
        return sorted(offsets)

    def write_snapshot(self, offset: int) -> None:
        body = bytearray(struct.pack(">i", len(self.producers)))
        for producer_id, entry in self.producers.items():
            body += _PRODUCER.pack(producer_id, entry.epoch, len(entry.batches))
            for batch in entry.batches:
                body += _BATCH.pack(batch.first_sequence, batch.last_sequence, batch.first_offset,
                                    batch.last_offset, batch.timestamp)
        data = struct.pack(">hI", _SNAPSHOT_VERSION, zlib.crc32(body)) + body
        path = self.snapshot_path(offset)
        with open(path + ".tmp", "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(path + ".tmp", path)
        for old in self.snapshot_offsets()[:-2]:
            os.remove(self.snapshot_path(old))

    def load_snapshot(self, max_offset: int) -> int:
        """Load the newest readable snapshot at or below `max_offset`; returns its offset (or -1)."""
        for offset in reversed(self.snapshot_offsets()):
            if offset > max_offset:
                os.remove(self.snapshot_path(offset))
                continue
            producers = self._read(self.snapshot_path(offset))
            if producers is not None:
                self.producers = producers
                return offset
        self.producers = {}
        return -1

    @staticmethod
    def _read(path: str) -> dict[int, ProducerEntry] | None:
        with open(path, "rb") as handle:
            data = handle.read()
        if len(data) < _SNAPSHOT_HEADER.size:
            return None
        version, crc, count = _SNAPSHOT_HEADER.unpack_from(data)
        if version != _SNAPSHOT_VERSION or zlib.crc32(data[6:]) != crc:
            return None
        producers: dict[int, ProducerEntry] = {}
        pos = _SNAPSHOT_HEADER.size
        try:
            for _ in range(count):
                producer_id, epoch, batch_count = _PRODUCER.unpack_from(data, pos)
                pos += _PRODUCER.size
                entry = ProducerEntry(epoch)
                for _ in range(batch_count):
                    entry.batches.append(BatchMetadata(*_BATCH.unpack_from(data, pos)))
                    pos += _BATCH.size
                producers[producer_id] = entry
        except struct.error:
            return None
        return producers
