"""Producer state of one partition: epoch, last sequences and ongoing transaction per producer id.

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
| non-transactional batch while the producer has a       | INVALID_TXN_STATE                    |
| transaction open                                       |                                      |
| transactional batch, no transaction open               | opens one at the batch's offset      |
| COMMIT/ABORT marker (control batch) with an epoch      | INVALID_PRODUCER_EPOCH               |
| below the producer's                                   |                                      |
| marker with a coordinator epoch below the producer's   | TRANSACTION_COORDINATOR_FENCED       |
| marker                                                 | closes the open transaction (if any: |
|                                                        | a marker without data completes      |
|                                                        | nothing), takes its epochs           |

Changes of one append are collected in a `ProducerAppend` and applied only once the batches are
written, so a rejected request leaves no trace. Replaying the log (`update`: recovery, followers)
applies batches without checks, as Kafka does for its own log and for replication.

Transactions and the last stable offset (Kafka's ongoingTxns / unreplicatedTxns): a transaction is
open from its first batch until its marker is appended, then "unreplicated" until the high
watermark passes the marker (`on_high_watermark`). The first unstable offset is the first offset
of the earliest of either; the log's last stable offset is that, bounded by the high watermark.

Snapshot file `<20-digit offset>.snapshot` holds the state of every batch below that offset.
Format (big-endian): version int16 (=2), crc uint32 (CRC32C of everything after it), producer
count int32, then per producer: producer id int64, epoch int16, last timestamp int64, coordinator
epoch int32, current transaction first offset int64 (-1: none; Kafka's CurrentTxnFirstOffset),
batch count int8, then per batch (oldest first): first sequence int32, last sequence int32, first
offset int64, last offset int64. Version 1 (written before transactions: no coordinator epoch and
no transaction offset) is still read. A snapshot that is short or fails its CRC is ignored.
Gregor keeps the last five batches per producer where Kafka's snapshot keeps the last one, which is
why the layout is Gregor's own.
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
NO_OFFSET = -1
_VERSION = 2
_HEAD = struct.Struct(">hIi")
_PRODUCER_V1 = struct.Struct(">qhqb")
_PRODUCER = struct.Struct(">qhqiqb")
_BATCH = struct.Struct(">iiqq")


class BatchMetadata(NamedTuple):
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


class TxnMarker(NamedTuple):
    """A decoded COMMIT/ABORT control record: the marker's producer epoch and coordinator epoch."""

    commit: bool
    producer_epoch: int
    coordinator_epoch: int
    timestamp: int


class CompletedTxn(NamedTuple):
    """A transaction closed by the marker at `last_offset`."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerEntry:
    """What the partition remembers of one producer id."""

    __slots__ = ("epoch", "batches", "last_timestamp", "coordinator_epoch", "current_txn_first_offset")

    def __init__(self, epoch: int, batches: deque[BatchMetadata] | None = None, last_timestamp: int = -1,
                 coordinator_epoch: int = -1, current_txn_first_offset: int = NO_OFFSET) -> None:
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = batches if batches is not None else deque(maxlen=CACHED_BATCHES)
        self.last_timestamp = last_timestamp
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = current_txn_first_offset

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.epoch, deque(self.batches, maxlen=CACHED_BATCHES), self.last_timestamp,
                             self.coordinator_epoch, self.current_txn_first_offset)

    def with_epoch(self, epoch: int) -> ProducerEntry:
        """A copy in `epoch`: a new epoch forgets the sequences, keeps the transaction state."""
        if epoch == self.epoch:
            return self.copy()
        return ProducerEntry(epoch, None, self.last_timestamp, self.coordinator_epoch, self.current_txn_first_offset)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    def find_duplicate(self, first_sequence: int, last_sequence: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_sequence == first_sequence and batch.last_sequence == last_sequence:
                return batch
        return None

    def add(self, header: BatchHeader, first_offset: int) -> None:
        """A data batch: its sequences, and the transaction it opens."""
        if header.base_sequence >= 0:
            self.batches.append(BatchMetadata(header.base_sequence, header.last_sequence, first_offset,
                                              first_offset + header.last_offset_delta))
        self.last_timestamp = max(self.last_timestamp, header.max_timestamp)
        if header.is_transactional and self.current_txn_first_offset < 0:
            self.current_txn_first_offset = first_offset

    def end_txn(self, producer_id: int, marker: TxnMarker, offset: int) -> CompletedTxn | None:
        """A marker at `offset`: the transaction it closes (none when it closes no data)."""
        first = self.current_txn_first_offset
        self.current_txn_first_offset = NO_OFFSET
        self.coordinator_epoch = marker.coordinator_epoch
        self.last_timestamp = max(self.last_timestamp, marker.timestamp)
        return None if first < 0 else CompletedTxn(producer_id, first, offset, not marker.commit)


def _in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == MAX_SEQUENCE)


class ProducerAppend:
    """The producer-state changes of one append request, applied by `commit` after the write."""

    def __init__(self, manager: ProducerStateManager) -> None:
        self._manager = manager
        self._pending: dict[int, ProducerEntry] = {}
        self._completed: list[CompletedTxn] = []

    def _entry(self, producer_id: int) -> ProducerEntry | None:
        entry = self._pending.get(producer_id)
        return entry if entry is not None else self._manager.producers.get(producer_id)

    def check(self, header: BatchHeader, first_offset: int) -> BatchMetadata | None:
        """Validate a client batch that will get `first_offset`; the original batch if it is a duplicate."""
        producer_id = header.producer_id
        entry = self._entry(producer_id)
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
            elif header.base_sequence != 0:
                raise StorageError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                   f"new epoch {epoch} of producer {producer_id} starts at sequence "
                                   f"{header.base_sequence}, not 0")
            if entry.current_txn_first_offset >= 0 and not header.is_transactional:
                raise StorageError(ErrorCode.INVALID_TXN_STATE,
                                   f"producer {producer_id} wrote a non-transactional batch inside its "
                                   f"transaction open since offset {entry.current_txn_first_offset}")
            if producer_id not in self._pending or epoch != entry.epoch:
                entry = self._pending[producer_id] = entry.with_epoch(epoch)
        else:
            entry = self._pending[producer_id] = ProducerEntry(epoch)
        entry.add(header, first_offset)
        return None

    def check_marker(self, producer_id: int, marker: TxnMarker, offset: int) -> None:
        """Validate a COMMIT/ABORT marker the transaction coordinator writes at `offset`."""
        entry = self._entry(producer_id)
        if entry is None:
            entry = ProducerEntry(marker.producer_epoch)
        elif marker.producer_epoch < entry.epoch:
            raise StorageError(ErrorCode.INVALID_PRODUCER_EPOCH,
                               f"marker for producer {producer_id} has epoch {marker.producer_epoch}, older "
                               f"than the current {entry.epoch}")
        elif marker.coordinator_epoch < entry.coordinator_epoch:
            raise StorageError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                               f"marker for producer {producer_id} comes from coordinator epoch "
                               f"{marker.coordinator_epoch}, older than {entry.coordinator_epoch}")
        entry = self._pending[producer_id] = entry.with_epoch(marker.producer_epoch)
        completed = entry.end_txn(producer_id, marker, offset)
        if completed is not None:
            self._completed.append(completed)

    def commit(self) -> list[CompletedTxn]:
        """Apply the changes; the transactions the append's markers closed, for the log to index."""
        self._manager.apply(self._pending)
        return self._completed


class ProducerStateManager:
    """Producer entries of a partition, with snapshots in its directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.unreplicated: list[CompletedTxn] = []  # closed, the marker not yet below the high watermark

    def begin_append(self) -> ProducerAppend:
        return ProducerAppend(self)

    def apply(self, entries: dict[int, ProducerEntry]) -> None:
        """Take new entries (of a checked append), keeping the open transactions in step."""
        for producer_id, entry in entries.items():
            self.producers[producer_id] = entry
            if entry.current_txn_first_offset >= 0:
                self.ongoing[producer_id] = entry.current_txn_first_offset

    def update(self, header: BatchHeader, first_offset: int, marker: TxnMarker | None = None) -> CompletedTxn | None:
        """Apply a batch read back from the log or replicated (no checks: the leader checked);
        a marker's batch comes with `marker` decoded. The transaction a marker closed, if any."""
        producer_id = header.producer_id
        if producer_id < 0:
            return None
        entry = self.producers.get(producer_id)
        epoch = marker.producer_epoch if marker is not None else header.producer_epoch
        if entry is None or entry.epoch != epoch:
            entry = self.producers[producer_id] = ProducerEntry(epoch) if entry is None else entry.with_epoch(epoch)
        if marker is not None:
            return entry.end_txn(producer_id, marker, first_offset)
        entry.add(header, first_offset)
        if entry.current_txn_first_offset >= 0:
            self.ongoing[producer_id] = entry.current_txn_first_offset
        return None

    def complete(self, txn: CompletedTxn) -> int:
        """Close `txn` (its marker was appended); returns the last stable offset Kafka's index
        records with it: the first offset of the earliest other open transaction, else the offset
        after the marker."""
        self.ongoing.pop(txn.producer_id, None)
        last_stable = min(self.ongoing.values(), default=txn.last_offset + 1)
        self.unreplicated.append(txn)
        return last_stable

    def on_high_watermark(self, high_watermark: int) -> None:
        """Transactions whose marker is below the high watermark are stable."""
        if self.unreplicated and self.unreplicated[0].last_offset < high_watermark:
            self.unreplicated = [txn for txn in self.unreplicated if txn.last_offset >= high_watermark]

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest transaction open or not yet replicated; None without one."""
        if not self.ongoing and not self.unreplicated:
            return None
        return min([*self.ongoing.values(), *(txn.first_offset for txn in self.unreplicated)])

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `producer.id.expiration.ms` (by their last batch timestamp);
        a producer with a transaction open stays, as in Kafka."""
        expired = [pid for pid, entry in self.producers.items()
                   if now_ms - entry.last_timestamp >= expiration_ms and entry.current_txn_first_offset < 0]
        for producer_id in expired:
            del self.producers[producer_id]
        return len(expired)

    def clear(self) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()

    def _reset(self, producers: dict[int, ProducerEntry]) -> None:
        self.producers = producers
        self.ongoing = {pid: entry.current_txn_first_offset for pid, entry in producers.items()
                        if entry.current_txn_first_offset >= 0}
        self.unreplicated = []

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
            body += _PRODUCER.pack(producer_id, entry.epoch, entry.last_timestamp, entry.coordinator_epoch,
                                   entry.current_txn_first_offset, len(entry.batches))
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

    def load_snapshot(self, max_offset: int, at_or_below: int | None = None) -> int:
        """Load the newest readable snapshot at or below `max_offset` (and `at_or_below`, when a
        replay must start no later); its offset, or -1 with no state.

        Snapshots above `max_offset` describe data that is gone and are deleted.
        """
        self.delete_snapshots_above(max_offset)
        limit = max_offset if at_or_below is None else min(max_offset, at_or_below)
        for offset in reversed(self.snapshot_offsets()):
            if offset > limit:
                continue
            producers = read_snapshot(self.snapshot_path(offset))
            if producers is not None:
                self._reset(producers)
                return offset
        self._reset({})
        return -1


def read_snapshot(path: str) -> dict[int, ProducerEntry] | None:
    """The producers of a snapshot file; None when it is short, damaged or of an unknown version."""
    with open(path, "rb") as handle:
        data = handle.read()
    if len(data) < _HEAD.size:
        return None
    version, crc, count = _HEAD.unpack_from(data)
    if version not in (1, _VERSION) or crc32c(memoryview(data)[6:]) != crc:
        return None
    producers: dict[int, ProducerEntry] = {}
    pos = _HEAD.size
    try:
        for _ in range(count):
            if version == 1:
                producer_id, epoch, last_timestamp, batch_count = _PRODUCER_V1.unpack_from(data, pos)
                coordinator_epoch, txn_first_offset = -1, NO_OFFSET
                pos += _PRODUCER_V1.size
            else:
                (producer_id, epoch, last_timestamp, coordinator_epoch, txn_first_offset,
                 batch_count) = _PRODUCER.unpack_from(data, pos)
                pos += _PRODUCER.size
            batches: deque[BatchMetadata] = deque(maxlen=CACHED_BATCHES)
            for _ in range(batch_count):
                batches.append(BatchMetadata._make(_BATCH.unpack_from(data, pos)))
                pos += _BATCH.size
            producers[producer_id] = ProducerEntry(epoch, batches, last_timestamp, coordinator_epoch,
                                                   txn_first_offset)
    except struct.error:
        return None
    return producers
