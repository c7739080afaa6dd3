"""Idempotent-producer state of one partition: epoch and last sequences per producer id.

Rules (Kafka's ProducerStateManager / ProducerAppendInfo for appends from clients):

| incoming batch vs. state of its producer id            | outcome                              |
| ------------------------------------------------------ | ------------------------------------ |
| same epoch, same (first, last) sequence as one of the  | duplicate: not appended, the         |
| last 5 batches                                         | original offsets are returned        |
| epoch below the current one                            | INVALID_PRODUCER_EPOCH               |
| epoch above the current one, first sequence != 0       | OUT_OF_ORDER_SEQUENCE_NUMBER         |
| same epoch, first sequence != last sequence + 1        | OUT_OF_ORDER_SEQUENCE_NUMBER         |
| (sequences wrap from 2^31-1 to 0)                      |                                      |
| unknown producer id, any sequence                      | accepted (Kafka >= 2.5, KIP-360: the |
|                                                        | state may have been lost to          |
|                                                        | retention or DeleteRecords)          |

Changes of one append are collected in a `ProducerAppend` and applied only once the batches are
written, so a rejected request leaves no trace. Replaying the log (`update`) applies batches
without checks, as Kafka does for its own log.

Snapshot file `<20-digit offset>.snapshot` holds the state of every batch below that offset.
Format (big-endian): version int16 (=1), crc uint32 (CRC32C of everything after it), producer
count int32, then per producer: producer id int64, epoch int16, last timestamp int64, batch count
int8, then per batch (oldest first): first sequence int32, last sequence int32, first offset
int64, last offset int64. A snapshot that is short or fails its CRC is ignored.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from typing import NamedTuple

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import BatchHeader
from gregor.records.crc import crc32c
from gregor.storage.errors import StorageError

CACHED_BATCHES = 5
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOTS_KEPT = 2
MAX_SEQUENCE = 0x7FFFFFFF
_VERSION = 1
_HEAD = struct.Struct(">hIi")
_PRODUCER = struct.Struct(">qhqb")
_BATCH = struct.Struct(">iiqq")


class BatchMetadata(NamedTuple):
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


class ProducerEntry:
    """What the partition remembers of one producer id."""

    __slots__ = ("epoch", "batches", "last_timestamp")

    def __init__(self, epoch: int, batches: deque[BatchMetadata] | None = None, last_timestamp: int = -1) -> None:
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = batches if batches is not None else deque(maxlen=CACHED_BATCHES)
        self.last_timestamp = last_timestamp

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.epoch, deque(self.batches, maxlen=CACHED_BATCHES), self.last_timestamp)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    def find_duplicate(self, first_sequence: int, last_sequence: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_sequence == first_sequence and batch.last_sequence == last_sequence:
                return batch
        return None

    def add(self, header: BatchHeader, first_offset: int) -> None:
        if header.base_sequence >= 0:
            self.batches.append(BatchMetadata(header.base_sequence, header.last_sequence, first_offset,
                                              first_offset + header.last_offset_delta))
        self.last_timestamp = max(self.last_timestamp, header.max_timestamp)


def _in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == MAX_SEQUENCE)


class ProducerAppend:
    """The producer-state changes of one append request, applied by `commit` after the write."""

    def __init__(self, manager: ProducerStateManager) -> None:
        self._manager = manager
        self._pending: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader, first_offset: int) -> BatchMetadata | None:
        """Validate a client batch that will get `first_offset`; the original batch if it is a duplicate."""
        producer_id = header.producer_id
        entry = self._pending.get(producer_id)
        if entry is None:
            entry = self._manager.producers.get(producer_id)
        epoch = header.producer_epoch
        if entry is not None:
            if epoch < entry.epoch:
                raise StorageError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                   f"producer {producer_id} epoch {epoch} is older than the current {entry.epoch}")
            if epoch == entry.epoch:
                duplicate = entry.find_duplicate(header.base_sequence, header.last_sequence)
                if duplicate is not None:
                    return duplicate
                if not _in_sequence(entry.last_sequence, header.base_sequence):
                    raise StorageError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                       f"producer {producer_id} sent sequence {header.base_sequence}, "
                                       f"expected {(entry.last_sequence + 1) & MAX_SEQUENCE}")
                if producer_id not in self._pending:
                    entry = self._pending[producer_id] = entry.copy()
                entry.add(header, first_offset)
                return None
            if header.base_sequence != 0:
                raise StorageError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                   f"new epoch {epoch} of producer {producer_id} starts at sequence "
                                   f"{header.base_sequence}, not 0")
        entry = self._pending[producer_id] = ProducerEntry(epoch)
        entry.add(header, first_offset)
        return None

    def commit(self) -> None:
        self._manager.producers.update(self._pending)


class ProducerStateManager:
    """Producer entries of a partition, with snapshots in its directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}

    def begin_append(self) -> ProducerAppend:
        return ProducerAppend(self)

    def update(self, header: BatchHeader, first_offset: int) -> None:
        """Apply a batch read back from the log (no checks: the log already accepted it)."""
        if header.producer_id < 0:
            return
        entry = self.producers.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.epoch:
            entry = self.producers[header.producer_id] = ProducerEntry(header.producer_epoch)
        entry.add(header, first_offset)

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `producer.id.expiration.ms` (by their last batch timestamp)."""
        expired = [pid for pid, entry in self.producers.items() if now_ms - entry.last_timestamp >= expiration_ms]
        for producer_id in expired:
            del self.producers[producer_id]
        return len(expired)

    def clear(self) -> None:
        self.producers.clear()

    # -- snapshots

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")

    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for name in os.listdir(self.directory):
            stem = name[:-len(SNAPSHOT_SUFFIX)]
            if name.endswith(SNAPSHOT_SUFFIX) and stem.isdigit():
                offsets.append(int(stem))
        return sorted(offsets)

    def write_snapshot(self, offset: int) -> None:
        """Persist the state as of `offset` (temp file, fsync, rename); keep the newest two."""
        body = bytearray(struct.pack(">i", len(self.producers)))
        for producer_id, entry in self.producers.items():
            body += _PRODUCER.pack(producer_id, entry.epoch, entry.last_timestamp, len(entry.batches))
            for batch in entry.batches:
                body += _BATCH.pack(*batch)
        data = struct.pack(">hI", _VERSION, crc32c(body)) + body
        path = self.snapshot_path(offset)
        with open(path + ".tmp", "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(path + ".tmp", path)
        for old in self.snapshot_offsets()[:-SNAPSHOTS_KEPT]:
            os.remove(self.snapshot_path(old))

    def delete_snapshots_above(self, offset: int) -> None:
        for snapshot in self.snapshot_offsets():
            if snapshot > offset:
                os.remove(self.snapshot_path(snapshot))

    def load_snapshot(self, max_offset: int) -> int:
        """Load the newest readable snapshot at or below `max_offset`; its offset, or -1 with no state.

        Snapshots above `max_offset` describe data that is gone and are deleted.
        """
        self.delete_snapshots_above(max_offset)
        for offset in reversed(self.snapshot_offsets()):
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
        if len(data) < _HEAD.size:
            return None
        version, crc, count = _HEAD.unpack_from(data)
        if version != _VERSION or crc32c(memoryview(data)[6:]) != crc:
            return None
        producers: dict[int, ProducerEntry] = {}
        pos = _HEAD.size
        try:
            for _ in range(count):
                producer_id, epoch, last_timestamp, batch_count = _PRODUCER.unpack_from(data, pos)
                pos += _PRODUCER.size
                batches: deque[BatchMetadata] = deque(maxlen=CACHED_BATCHES)
                for _ in range(batch_count):
                    batches.append(BatchMetadata._make(_BATCH.unpack_from(data, pos)))
                    pos += _BATCH.size
                producers[producer_id] = ProducerEntry(epoch, batches, last_timestamp)
        except struct.error:
            return None
        return producers
