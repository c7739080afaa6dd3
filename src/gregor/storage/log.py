"""The log of one partition: a directory `<topic>-<partition>` of segments, as Kafka's UnifiedLog.

Appending validates each batch of a produce request (size, CRC, counts, timestamps, producer
sequence) with O(1) Python work per batch, numbers it in place and writes the request with one
`pwrite`; nothing is written unless every batch is valid. Reads return file regions of whole
batches. Recovery after an unclean stop re-validates every batch from the recovery point and
truncates at the first bad one.

Choices where Kafka leaves room or Gregor differs:
- Reads stop before the first batch that reaches `max_offset` (the high watermark), so a batch
  straddling it is returned only once the high watermark has passed its last offset.
- Reads continue into the following segments until `max_bytes` is used (Kafka reads one segment).
- Retention follows Kafka: only segments wholly below the high watermark go; the active segment
  goes too when it qualifies, after a roll to a new empty active segment.
- Deleted segments are renamed `*.deleted` and closed after `file.delete.delay.ms`, so file
  regions handed to a fetch stay readable meanwhile.
- A roll fsyncs the finished segment and advances the recovery point (Kafka does it in the
  background); with the default flush settings that is the only fsync before shutdown.
- `high_watermark` starts at the log end offset on open and is never moved by appends: the
  replication layer (or raft) owns it.
- Compaction (cleanup.policy=compact) is `gregor.storage.cleaner`'s: the log refuses records
  without a key on such topics when the caller asks (`check_keys`; Kafka always does), rolls
  within max.compaction.lag.ms, swaps cleaned segments in with `replace_segments`, completes or
  undoes an interrupted swap at load (`gregor.storage.swap`), and keeps the cleaner's checkpoint
  (`cleaner_offset`) below the log end across truncations.
- Transactions (Kafka's UnifiedLog): transactional batches open a transaction of their producer
  (`ProducerStateManager`); COMMIT/ABORT markers (`append_txn_marker`, the transaction
  coordinator's WriteTxnMarkers, or replicated) close it, and an aborted one gets an entry in the
  `.txnindex` of the segment its marker lands in. `last_stable_offset` is the first offset of the
  earliest transaction open or whose marker is not yet below the high watermark, bounded by the
  high watermark; `aborted_transactions` answers a read_committed fetch. Recovery rebuilds the
  aborted-transaction index of every recovered segment by replaying the producer state from a
  snapshot at or below it. Control batches are refused from clients (`from_client`:
  INVALID_RECORD, as Kafka's validator refuses them for the client origin); raft writes its own.
- A produce's batches are parsed and validated here only: the produce handler reads nothing of
  them but the magic byte that tells a legacy message set (up-converted first) from v2 batches.
"""

from __future__ import annotations

import logging
import os
import shutil
from bisect import bisect_right
from operator import attrgetter
from typing import Callable, NamedTuple, Sequence, cast

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import (
    LOG_OVERHEAD, BatchHeader, scan_batches, set_base_offset, set_log_append_time,
    set_partition_leader_epoch, validate_batch,
)
from gregor.records.record import build_txn_marker, decode_records, txn_marker_of
from gregor.storage.errors import StorageError
from gregor.storage.file_slice import FetchDataInfo, FileSlice
from gregor.storage.recent_appends import RecentAppends
from gregor.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochCache
from gregor.storage.log_config import LogConfig
from gregor.storage.producer_state import CompletedTxn, ProducerAppend, ProducerStateManager, TxnMarker
from gregor.storage.segment import (
    DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, LogSegment,
    OffsetPosition,
)
from gregor.storage.swap import complete_interrupted_swaps
from gregor.storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)

MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
_STALE_SUFFIXES = (".tmp", DELETED_SUFFIX)
_base_offset = attrgetter("base_offset")

__all__ = ["AppendInfo", "Log", "LogConfig", "OffsetPosition", "parse_partition_dir"]


class AppendInfo(NamedTuple):
    """Outcome of an append: offsets given to the records, or those of the original on a duplicate."""

    first_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    duplicate: bool = False


class _Checked(NamedTuple):
    """A produce request's batches, validated and numbered, about to be written."""

    data: bytearray
    described: list[tuple[int, int, int, int]]
    first_offset: int
    last_offset: int
    record_count: int
    max_timestamp: int
    producers: ProducerAppend | None


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a directory named `<topic>-<partition>`, else None."""
    topic, dash, index = name.rpartition("-")
    if not dash or not topic or not index.isdigit():
        return None
    return topic, int(index)


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Log:
    """One partition's segments, offsets, producer state and retention."""

    def __init__(self, directory: str, config: LogConfig, now_ms: int, recovery_point: int = 0,
                 log_start_offset: int = 0, clean_shutdown: bool = False) -> None:
        self.directory = directory
        self.config = config
        os.makedirs(directory, exist_ok=True)
        name = os.path.basename(directory)
        self.topic, self.partition = parse_partition_dir(name) or (name, 0)
        self.segments: list[LogSegment] = []
        self.producer_state = ProducerStateManager(directory)
        self.leader_epoch_cache = LeaderEpochCache(os.path.join(directory, LEADER_EPOCH_CHECKPOINT))
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        self._high_watermark = 0
        self.last_flush_ms = now_ms
        self.truncated_bytes_at_load = 0
        self.cleaner_offset = 0
        self.truncations = 0
        self._recent = RecentAppends()  # the latest appends as leader, for reads of the log's tail
        self._position_memo: tuple[int, OffsetPosition] | None = None  # (truncations, the last one found)
        self._deleted: list[LogSegment] = []
        self._now_ms = now_ms
        self._load(now_ms, clean_shutdown)

    # -- loading

    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        return LogSegment(self.directory, base_offset, self.config.index_interval_bytes,
                          self.config.segment_index_bytes, now_ms)

    def _load(self, now_ms: int, clean_shutdown: bool) -> None:
        swapped = complete_interrupted_swaps(self.directory, self.config.index_interval_bytes,
                                             self.config.segment_index_bytes, now_ms)
        names = os.listdir(self.directory)
        for name in names:
            if name.endswith(_STALE_SUFFIXES):
                os.remove(os.path.join(self.directory, name))
        bases = sorted(int(n[:-len(LOG_SUFFIX)]) for n in names
                       if n.endswith(LOG_SUFFIX) and n[:-len(LOG_SUFFIX)].isdigit())
        self._remove_orphan_indexes(names, set(bases))
        recover_from = max((b for b in bases if b <= self.recovery_point), default=0)
        first_recovered: int | None = None
        broken = False
        for base in bases:
            segment = self._new_segment(base, now_ms)
            if broken or (self.segments and base < self.segments[-1].next_offset):
                segment.destroy()
                broken = True
                continue
            needs_recovery = (not clean_shutdown and base >= recover_from) or base in swapped
            if needs_recovery or not segment.load():
                if first_recovered is None:
                    first_recovered = base
                truncated = segment.recover()
                if truncated:
                    self.truncated_bytes_at_load += truncated
                    broken = True
            self.segments.append(segment)
        for segment in self.segments[:-1]:
            segment.seal()
        if not self.segments:
            self.segments.append(self._new_segment(max(self.log_start_offset, 0), now_ms))
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        if self.log_start_offset > self.log_end_offset:
            self._truncate_fully_and_start_at(self.log_start_offset, now_ms)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        if first_recovered is not None:
            for segment in self.segments[self._segment_index(first_recovered):]:
                segment.txn_index.reset()  # everything after a recovered segment is rebuilt with it
        self._load_producer_state(first_recovered)
        self._load_leader_epochs(first_recovered)
        self._high_watermark = self.log_end_offset  # transactions replayed stay unstable until it is set

    def _load_leader_epochs(self, first_recovered: int | None) -> None:
        """Checkpointed epochs, plus the newer ones of the batches recovery re-read (all of them
        without a valid checkpoint), cut to the recovered log's bounds.

        As in Kafka's segment recovery, a re-read batch adds its epoch only when it is newer than
        every known one: assigning an older epoch would drop the later, checkpointed entries.
        """
        cache = self.leader_epoch_cache
        scan_from = first_recovered if cache.loaded else self.segments[0].base_offset
        if scan_from is not None:
            for segment in self.segments[self._segment_index(scan_from):]:
                for _, header in segment.batches():
                    if header.partition_leader_epoch > cache.latest_epoch:
                        cache.assign(header.partition_leader_epoch, header.base_offset)
        cache.truncate_from_end(self.log_end_offset)
        cache.truncate_from_start(self.log_start_offset)

    def _remove_orphan_indexes(self, names: list[str], bases: set[int]) -> None:
        for name in names:
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                stem = name[:-len(suffix)]
                if name.endswith(suffix) and stem.isdigit() and int(stem) not in bases:
                    os.remove(os.path.join(self.directory, name))

    def _load_producer_state(self, rebuild_txn_index_from: int | None = None) -> None:
        """Newest snapshot at or below the log end, then the batch headers after it (markers decoded).

        `rebuild_txn_index_from`: the base of the first recovered segment, whose aborted-transaction
        indexes (and those of every later segment) were emptied: the replay starts at a snapshot
        no later than it and writes their entries again.
        """
        state = self.producer_state
        start = max(state.load_snapshot(self.log_end_offset, rebuild_txn_index_from), 0)
        for segment in self.segments[self._segment_index(start):]:
            rebuild = rebuild_txn_index_from is not None and segment.base_offset >= rebuild_txn_index_from
            for position, header in segment.batches(segment.offset_index.lookup(start)[1]):
                if header.base_offset >= start and header.producer_id >= 0:
                    marker = None
                    if header.is_control:
                        marker = self._marker(segment.read_batch(position, header), 0, header)
                        if marker is None:
                            continue
                    completed = state.update(header, header.base_offset, marker)
                    if completed is not None:
                        self._complete_txn(completed, segment if rebuild else None)

    @staticmethod
    def _marker(data: bytes | bytearray, pos: int, header: BatchHeader) -> TxnMarker | None:
        """The COMMIT/ABORT marker a control batch holds; None for other control batches (and for
        one without exactly one record, which no transaction coordinator writes)."""
        records = decode_records(data, pos, header, MAX_UNCOMPRESSED_BYTES)
        if len(records) != 1:
            return None
        found = txn_marker_of(records[0])
        if found is None:
            return None
        return TxnMarker(found[0], header.producer_epoch, found[1], header.max_timestamp)

    def _complete_txn(self, txn: CompletedTxn, segment: LogSegment | None) -> None:
        """A marker closed `txn`; an aborted one is indexed in `segment` (the marker's) when given."""
        last_stable = self.producer_state.complete(txn)
        if txn.aborted and segment is not None:
            segment.txn_index.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, last_stable))

    # -- offsets

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self._high_watermark = offset
        self.producer_state.on_high_watermark(offset)

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed reads stop: the first offset of the earliest transaction still open
        or whose marker is not yet below the high watermark (not below the log start offset, as in
        Kafka: DeleteRecords may have removed its start), else the high watermark."""
        unstable = self.producer_state.first_unstable_offset()
        if unstable is None or unstable >= self._high_watermark:
            return self._high_watermark
        return max(unstable, self.log_start_offset)

    def end_of_read(self, info: FetchDataInfo) -> int:
        """The offset after the last batch a read returned (Kafka's fetchUpperBoundOffset): the
        next batch's base offset (one header read), the next segment's base, or the log end."""
        if not info.slices:
            return info.fetch_offset
        last = info.slices[-1]
        for index in range(self._segment_index(info.fetch_offset), len(self.segments)):
            segment = self.segments[index]
            if segment.file is last.file:
                end = last.position + last.length
                following = segment.base_offset_at(end) if end < segment.size else None
                if following is not None:
                    return following
                return self.segments[index + 1].base_offset if index + 1 < len(self.segments) else self.log_end_offset
        return self.log_end_offset

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound), for a read_committed
        fetch (Kafka's collectAbortedTransactions): the segment holding `fetch_offset` and those
        after it, until an entry shows that no later abort can reach back into the range."""
        found: list[AbortedTxn] = []
        for segment in self.segments[self._segment_index(fetch_offset):]:
            entries, complete = segment.txn_index.collect(fetch_offset, upper_bound)
            found.extend(entries)
            if complete:
                break
        return found

    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self.segments)

    def _segment_index(self, offset: int) -> int:
        """Index in `segments` of the segment that holds `offset` (0 below the first)."""
        return max(bisect_right(self.segments, offset, key=_base_offset) - 1, 0)

    # -- appending

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int,
                         now_ms: int, check_keys: bool = False, from_client: bool = False) -> AppendInfo:
        """Validate, number and append the batches of one produce request for this partition.

        With `check_keys` (the produce path's setting), a compacted log refuses records without a
        key, as Kafka's validator does; only a compacted log's batches are decoded for that.
        `from_client`: the records come from a client's Produce, which may not write control
        batches.

        Raises StorageError/RecordsError (both KafkaError with `.code`): CORRUPT_MESSAGE (bad CRC,
        no complete batch, trailing bytes, magic other than 2), INVALID_RECORD (counts and offset
        deltas disagree), MESSAGE_TOO_LARGE (a batch above max.message.bytes),
        RECORD_LIST_TOO_LARGE (request above segment.bytes), INVALID_RECORD (a control batch from a
        client), INVALID_TIMESTAMP,
        INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_TXN_STATE,
        KAFKA_STORAGE_ERROR (the write failed).
        """
        self._now_ms = now_ms
        checked = self._checked(records, self.log_end_offset, leader_epoch, now_ms, check_keys, from_client)
        if isinstance(checked, AppendInfo):
            return checked
        return self._write_checked([checked], leader_epoch, now_ms)[0]

    def append_many_as_leader(self, record_sets: Sequence[bytes | bytearray | memoryview], leader_epoch: int,
                              now_ms: int, check_keys: bool = False,
                              from_client: bool = False) -> list[AppendInfo | Exception]:
        """`append_as_leader` for several produce requests in order, each with its own outcome
        (its AppendInfo, or the error `append_as_leader` would raise), in as few writes as the
        records allow: a leader that many small requests reach at once (clients with
        `linger.ms=0`) pays one write, one roll check and one cache update for them all.

        A run of sets written together ends at a set with producer ids (the next set's sequence
        checks must see its producer state) and before a set that would take it past
        `segment.bytes`; a failed write fails its run and every set after it."""
        self._now_ms = now_ms
        outcomes: list[AppendInfo | Exception | None] = [None] * len(record_sets)
        run: list[tuple[int, _Checked]] = []
        run_bytes = 0
        next_offset = self.log_end_offset
        failed: StorageError | None = None
        for index, records in enumerate(record_sets):
            if run and run_bytes + len(records) > self.config.segment_bytes:
                failed = self._write_run(run, leader_epoch, now_ms, outcomes)
                run, run_bytes = [], 0
            if failed is not None:
                outcomes[index] = failed
                continue
            try:
                checked = self._checked(records, next_offset, leader_epoch, now_ms, check_keys, from_client)
            except Exception as error:  # noqa: BLE001 - the set's own outcome, what append_as_leader raises
                outcomes[index] = error
                continue
            if isinstance(checked, AppendInfo):
                outcomes[index] = checked
                continue
            run.append((index, checked))
            run_bytes += len(checked.data)
            next_offset = checked.last_offset + 1
            if checked.producers is not None:
                failed = self._write_run(run, leader_epoch, now_ms, outcomes)
                run, run_bytes = [], 0
        if run:
            self._write_run(run, leader_epoch, now_ms, outcomes)
        return cast("list[AppendInfo | Exception]", outcomes)  # every set got its outcome above

    def _write_run(self, run: list[tuple[int, _Checked]], leader_epoch: int, now_ms: int,
                   outcomes: list[AppendInfo | Exception | None]) -> StorageError | None:
        """Write checked sets together, their outcomes into `outcomes`; the error of a failed write."""
        try:
            infos = self._write_checked([checked for _, checked in run], leader_epoch, now_ms)
        except StorageError as error:
            for index, _ in run:
                outcomes[index] = error
            return error
        for (index, _), info in zip(run, infos):
            outcomes[index] = info
        return None

    def _checked(self, records: bytes | bytearray | memoryview, first_offset: int, leader_epoch: int, now_ms: int,
                 check_keys: bool, from_client: bool) -> _Checked | AppendInfo:
        """A produce request's batches validated and numbered from `first_offset`, not yet
        written; the original's AppendInfo for a producer's duplicate."""
        data = bytearray(records)
        config = self.config
        if len(data) > config.segment_bytes:
            raise StorageError(ErrorCode.RECORD_LIST_TOO_LARGE,
                               f"{len(data)} bytes of records exceed segment.bytes {config.segment_bytes}")
        batches, valid_end = scan_batches(data)
        if not batches or valid_end != len(data):
            raise StorageError(ErrorCode.CORRUPT_MESSAGE,
                               "records are not a whole number of complete record batches")
        log_append_time = config.log_append_time
        compacted = check_keys and config.compacts
        producers = None
        offset = first_offset
        described = []
        record_count = 0
        max_timestamp = -1
        for header, pos in batches:
            size = header.batch_length + LOG_OVERHEAD
            if size > config.max_message_bytes:
                raise StorageError(ErrorCode.MESSAGE_TOO_LARGE,
                                   f"record batch of {size} bytes exceeds max.message.bytes "
                                   f"{config.max_message_bytes}")
            validate_batch(data, pos, header)
            if compacted and not header.is_control:
                self._require_keys(data, pos, header)
            if header.is_control and from_client:
                raise StorageError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
            if header.is_transactional and header.producer_id < 0:
                raise StorageError(ErrorCode.INVALID_RECORD, "a transactional batch needs a producer id")
            if header.producer_id >= 0:
                if producers is None:
                    producers = self.producer_state.begin_append()
                if header.is_control:
                    marker = self._marker(data, pos, header)
                    if marker is not None:
                        producers.check_marker(header.producer_id, marker, offset)
                else:
                    duplicate = producers.check(header, offset)
                    if duplicate is not None:
                        return AppendInfo(duplicate.first_offset, duplicate.last_offset, -1,
                                          self.log_start_offset, 0, duplicate=True)
            if log_append_time:
                set_log_append_time(data, pos, header, now_ms)
                timestamp = now_ms
            else:
                timestamp = header.max_timestamp
                if timestamp >= 0:
                    self._check_timestamps(header, now_ms)
            set_base_offset(data, pos, offset)
            set_partition_leader_epoch(data, pos, leader_epoch)
            last = offset + header.last_offset_delta
            described.append((offset, last, size, timestamp))
            offset = last + 1
            record_count += header.records_count
            if timestamp > max_timestamp:
                max_timestamp = timestamp
        return _Checked(data, described, first_offset, offset - 1, record_count, max_timestamp, producers)

    def _write_checked(self, run: list[_Checked], leader_epoch: int, now_ms: int) -> list[AppendInfo]:
        """Write checked sets, numbered on from the log end, in one write."""
        first = run[0]
        if len(run) == 1:
            data, described, max_timestamp = first.data, first.described, first.max_timestamp
        else:
            data = bytearray().join([checked.data for checked in run])
            described = [entry for checked in run for entry in checked.described]
            max_timestamp = max(checked.max_timestamp for checked in run)
        segment = self._maybe_roll(len(data), run[-1].last_offset, max_timestamp, now_ms)
        _write(segment, data, described, now_ms)
        self._recent.record(segment, self.truncations, first.first_offset, segment.size - len(data), data)
        for checked in run:
            if checked.producers is not None:
                for txn in checked.producers.commit():
                    self._complete_txn(txn, segment)
        if leader_epoch >= 0:
            self.leader_epoch_cache.assign(leader_epoch, first.first_offset)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush(now_ms)
        append_time = now_ms if self.config.log_append_time else -1
        return [AppendInfo(checked.first_offset, checked.last_offset, append_time, self.log_start_offset,
                           checked.record_count) for checked in run]

    def append_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                          leader_epoch: int, now_ms: int) -> AppendInfo:
        """Complete the producer's transaction: append its COMMIT or ABORT marker as leader.

        Raises INVALID_PRODUCER_EPOCH (an epoch below the producer's), TRANSACTION_COORDINATOR_FENCED
        (a coordinator epoch below the last marker's), besides the append's errors.
        """
        marker = build_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit, now_ms)
        return self.append_as_leader(marker, leader_epoch, now_ms)

    def append_as_follower(self, records: bytes | bytearray | memoryview, now_ms: int) -> AppendInfo:
        """Append batches fetched from the leader as they are: offsets, epochs and timestamps kept.

        Each batch must pass its CRC and the batches must continue the log without a gap or an
        overlap; producer state and leader epochs follow the batches, unchecked (the leader checked).
        Raises CORRUPT_MESSAGE (bad CRC or not whole batches), OFFSET_OUT_OF_RANGE (the batches do
        not start at the log end or are not contiguous), KAFKA_STORAGE_ERROR (the write failed).
        """
        self._now_ms = now_ms
        data = bytes(records)
        batches, valid_end = scan_batches(data)
        if not batches or valid_end != len(data):
            raise StorageError(ErrorCode.CORRUPT_MESSAGE,
                               "records are not a whole number of complete record batches")
        expected = first_offset = self.log_end_offset
        for header, pos in batches:
            validate_batch(data, pos, header)
            if header.base_offset != expected:
                raise StorageError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                   f"batch at {header.base_offset} does not continue the log at {expected}")
            expected = header.last_offset + 1
        record_count = 0
        chunk_start = 0
        chunk: list[BatchHeader] = []
        for header, pos in batches:
            if chunk and pos + header.size - chunk_start > self.config.segment_bytes:
                self._append_replicated(data[chunk_start:pos], chunk, now_ms)
                chunk_start, chunk = pos, []
            chunk.append(header)
            record_count += header.records_count
        self._append_replicated(data[chunk_start:], chunk, now_ms)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush(now_ms)
        return AppendInfo(first_offset, self.log_end_offset - 1, -1, self.log_start_offset, record_count)

    def _append_replicated(self, data: bytes, headers: list[BatchHeader], now_ms: int) -> None:
        """Write a run of validated replicated batches that fits one segment."""
        described = [(h.base_offset, h.last_offset, h.size, h.max_timestamp) for h in headers]
        segment = self._maybe_roll(len(data), headers[-1].last_offset, max(h.max_timestamp for h in headers), now_ms)
        _write(segment, data, described, now_ms)
        position = 0
        for header in headers:
            if header.producer_id >= 0:
                marker = self._marker(data, position, header) if header.is_control else None
                if not header.is_control or marker is not None:
                    completed = self.producer_state.update(header, header.base_offset, marker)
                    if completed is not None:
                        self._complete_txn(completed, segment)
            position += header.size
            if header.partition_leader_epoch >= 0:
                self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)

    def _require_keys(self, data: bytearray, pos: int, header: BatchHeader) -> None:
        """Kafka's rule for compacted topics: a record without a key could never be cleaned."""
        for record in decode_records(data, pos, header, MAX_UNCOMPRESSED_BYTES):
            if record.key is None:
                raise StorageError(ErrorCode.INVALID_RECORD,
                                   f"Compacted topic cannot accept message without key in topic partition "
                                   f"{self.topic}-{self.partition}.")

    def _check_timestamps(self, header: BatchHeader, now_ms: int) -> None:
        """CreateTime bounds on the batch's first and largest timestamps (no per-record decode)."""
        config = self.config
        earliest = min(header.base_timestamp, header.max_timestamp)
        if header.max_timestamp - now_ms > config.timestamp_after_max_ms or \
                (earliest >= 0 and now_ms - earliest > config.timestamp_before_max_ms):
            raise StorageError(ErrorCode.INVALID_TIMESTAMP,
                               f"timestamps {header.base_timestamp}..{header.max_timestamp} are out of the "
                               f"range allowed around {now_ms}")

    def _maybe_roll(self, incoming_bytes: int, last_offset: int, max_timestamp: int, now_ms: int) -> LogSegment:
        segment = self.active_segment
        if not segment.can_hold(incoming_bytes, last_offset, self.config.segment_bytes) or (
                not segment.is_empty
                and segment.time_waited_for_roll(now_ms, max_timestamp) > self.config.max_segment_ms):
            return self.roll(now_ms)
        return segment

    def roll(self, now_ms: int) -> LogSegment:
        """Start a new active segment at the log end offset (a no-op while the active one is empty).

        Snapshots the producer state at the new base offset and fsyncs the finished segment.
        """
        self._now_ms = now_ms
        old = self.active_segment
        if old.is_empty:
            return old
        old.seal()
        segment = self._new_segment(self.log_end_offset, now_ms)
        self.segments.append(segment)
        self.producer_state.write_snapshot(segment.base_offset)
        self.flush(now_ms)
        _fsync_dir(self.directory)
        return segment

    # -- reading

    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchDataInfo:
        """Whole batches from the one holding `fetch_offset`, all below `max_offset`, within `max_bytes`.

        `max_offset` (exclusive; the high watermark for consumers, None for the log end) excludes
        any batch that reaches it. `min_one_batch` returns the first batch even when it is larger
        than `max_bytes`. Raises OFFSET_OUT_OF_RANGE when `fetch_offset` is below the log start
        offset or above the log end offset.
        """
        end = self.log_end_offset
        if fetch_offset < self.log_start_offset or fetch_offset > end:
            raise StorageError(ErrorCode.OFFSET_OUT_OF_RANGE,
                               f"offset {fetch_offset} is outside {self.log_start_offset}..{end}")
        limit = end if max_offset is None else min(max_offset, end)
        if limit == end:  # to the log end: most often from the start of a recent append, held in memory
            active = self.segments[-1]
            recent = self._recent.read(active, self.truncations, fetch_offset, max_bytes)
            if recent is not None:
                position, data = recent
                return FetchDataInfo(fetch_offset, (FileSlice(active.file, position, len(data)),), data=data)
        slices: list[FileSlice] = []
        remaining = max_bytes
        offset = fetch_offset
        for segment in self.segments[self._segment_index(fetch_offset):]:
            if offset >= limit or segment.base_offset >= limit:
                break
            piece = segment.read(offset, remaining, segment.position_bound(limit), min_one_batch and not slices)
            if piece is None:
                if segment.next_offset > offset and not segment.is_empty:
                    break
                continue
            slices.append(piece)
            remaining -= piece.length
            if remaining <= 0 or piece.position + piece.length < segment.size:
                break
            offset = segment.next_offset
        return FetchDataInfo(fetch_offset, tuple(slices))

    def read_bytes(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None,
                   min_one_batch: bool = True) -> bytes:
        """`read` copied into one bytes object."""
        return self.read(fetch_offset, max_bytes, max_offset, min_one_batch).read_bytes()

    def offset_position(self, offset: int) -> OffsetPosition:
        """Where a read from `offset` starts, and where a read bounded by `offset` stops: the start
        of the batch holding it, or the end of the log past the last batch. Free at the log end;
        elsewhere one index lookup and a walk over batch headers, remembered for the next call at
        the same offset (a high watermark is asked for by every fetch waiting on it)."""
        segment = self.segments[self._segment_index(offset)]
        if offset >= segment.next_offset:
            return OffsetPosition(offset, segment, segment.size)
        memo = self._position_memo
        if memo is not None and memo[0] == self.truncations and memo[1].offset == offset \
                and memo[1].segment is segment:
            return memo[1]
        found = OffsetPosition(offset, segment, segment.position_bound(offset))
        self._position_memo = (self.truncations, found)
        return found

    def bytes_between(self, start: OffsetPosition, end_offset: int) -> int | None:
        """The bytes of the whole batches a read from `start` bounded by `end_offset` would return
        (no max_bytes), counted from segment positions and sizes without reading the log; None
        when the log changed under `start` (its segment deleted, cleaned or truncated, or the
        log start moved past it), so that only a read can tell."""
        if not self.log_start_offset <= start.offset <= self.log_end_offset:
            return None
        index = self._segment_index(start.offset)
        if self.segments[index] is not start.segment or start.position > start.segment.size:
            return None
        if end_offset <= start.offset:
            return 0
        end = self.offset_position(min(end_offset, self.log_end_offset))
        total = -start.position
        for segment in self.segments[index:]:
            if segment is end.segment:
                return max(total + end.position, 0)
            total += segment.size
        return None

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after the log start with timestamp >= `timestamp`."""
        for segment in self.segments[self._segment_index(self.log_start_offset):]:
            if segment.max_timestamp >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset, MAX_UNCOMPRESSED_BYTES)
                if found is not None:
                    return found
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp (ListOffsets -3)."""
        best = None
        for segment in self.segments:
            if segment.max_timestamp >= 0 and (best is None or segment.max_timestamp > best.max_timestamp):
                best = segment
        return None if best is None else best.max_timestamp_record(MAX_UNCOMPRESSED_BYTES)

    # -- deleting

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset (DeleteRecords) and drop segments wholly below it.

        Returns the new log start offset. Raises OFFSET_OUT_OF_RANGE beyond the high watermark.
        """
        if offset < 0 or offset > self.high_watermark:
            raise StorageError(ErrorCode.OFFSET_OUT_OF_RANGE,
                               f"cannot delete before {offset}: the high watermark is {self.high_watermark}")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self._delete_first(self._deletable(self._below_log_start), self._now_ms)
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        return self.log_start_offset

    def _below_log_start(self, segment: LogSegment, following: LogSegment | None) -> bool:
        return following is not None and following.base_offset <= self.log_start_offset

    def apply_retention(self, now_ms: int) -> int:
        """Delete segments past retention.ms, beyond retention.bytes, or below the log start offset.

        Returns the number of segments deleted; also closes deleted segments whose
        file.delete.delay.ms has passed and forgets producers idle for producer.id.expiration.ms.
        """
        self._now_ms = now_ms
        self._purge_deleted(now_ms)
        config = self.config
        deleted = 0
        if config.deletes and config.retention_ms >= 0:
            deleted += self._delete_first(self._deletable(
                lambda segment, _: now_ms - segment.largest_timestamp > config.retention_ms), now_ms)
        if config.deletes and config.retention_bytes >= 0:
            excess = self.size_in_bytes() - config.retention_bytes

            def beyond_size(segment: LogSegment, _: LogSegment | None) -> bool:
                nonlocal excess
                if excess - segment.size < 0:
                    return False
                excess -= segment.size
                return True

            deleted += self._delete_first(self._deletable(beyond_size), now_ms)
        deleted += self._delete_first(self._deletable(self._below_log_start), now_ms)
        self.producer_state.remove_expired(now_ms, config.producer_id_expiration_ms)
        return deleted

    def _deletable(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        """How many leading segments qualify: wholly below the high watermark, predicate true."""
        count = 0
        for i, segment in enumerate(self.segments):
            following = self.segments[i + 1] if i + 1 < len(self.segments) else None
            upper = following.base_offset if following is not None else self.log_end_offset
            if self.high_watermark < upper or (following is None and segment.is_empty) \
                    or not predicate(segment, following):
                break
            count += 1
        return count

    def _delete_first(self, count: int, now_ms: int) -> int:
        if count == 0:
            return 0
        if count == len(self.segments):
            self.roll(now_ms)
        doomed = self.segments[:count]
        del self.segments[:count]
        for segment in doomed:
            self._schedule_delete(segment, now_ms)
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        return count

    def _schedule_delete(self, segment: LogSegment, now_ms: int) -> None:
        segment.mark_deleted(now_ms)
        self._deleted.append(segment)

    def _purge_deleted(self, now_ms: int) -> None:
        delay = self.config.file_delete_delay_ms
        keep = []
        for segment in self._deleted:
            if segment.deleted_at_ms is not None and now_ms - segment.deleted_at_ms >= delay:
                segment.destroy()
            else:
                keep.append(segment)
        self._deleted = keep

    def truncate_to(self, offset: int) -> None:
        """Remove every batch that holds an offset at or after `offset` (replication's repair).

        A batch is never split, so the log end offset may end up below `offset` when it falls
        inside a batch. Below the log start offset the log is emptied and restarted at `offset`.
        At or past the log end nothing is removed but leader epochs holding no batch are
        forgotten, as in Kafka: a replica that became leader and appended nothing must not
        present that epoch as its last one to the next leader.
        """
        if offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return
        if offset < self.log_start_offset:
            self._truncate_fully_and_start_at(offset, self._now_ms)
            return
        self.truncations += 1
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self._schedule_delete(self.segments.pop(), self._now_ms)
        self.active_segment.truncate_to(offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        self._load_producer_state()
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.cleaner_offset = min(self.cleaner_offset, self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and restart it at `offset` (a follower whose log ends below the leader's start)."""
        self._truncate_fully_and_start_at(offset, self._now_ms)

    def _truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        self.truncations += 1
        for segment in self.segments:
            self._schedule_delete(segment, now_ms)
        self.segments = [self._new_segment(offset, now_ms)]
        self.producer_state.clear()
        self.producer_state.delete_snapshots_above(-1)
        self.leader_epoch_cache.clear()
        self.log_start_offset = self.recovery_point = self.high_watermark = self.cleaner_offset = offset

    # -- compaction

    def replace_segments(self, old: Sequence[LogSegment], new: LogSegment, now_ms: int) -> bool:
        """Swap the cleaned segment `new` (files suffixed `.cleaned`) in for the run of segments `old`.

        Call it on the thread that appends to the log. The steps follow `gregor.storage.swap`, so a
        crash anywhere is completed or undone at the next load. The old segments are deleted like
        retention's (file.delete.delay.ms later), so reads already handed out stay valid. Returns
        False, changing nothing, when `old` is no longer a run of non-active segments of this log
        (retention, DeleteRecords or a truncation got there first).
        """
        start = next((i for i, segment in enumerate(self.segments) if segment is old[0]), None)
        if start is None or start + len(old) >= len(self.segments) or \
                any(a is not b for a, b in zip(self.segments[start:start + len(old)], old)):
            return False
        new.rename_suffix(SWAP_SUFFIX)
        _fsync_dir(self.directory)
        self.segments[start:start + len(old)] = [new]
        for segment in old:
            self._schedule_delete(segment, now_ms)
        new.rename_suffix("")
        _fsync_dir(self.directory)
        return True

    # -- durability and lifecycle

    def flush(self, now_ms: int) -> None:
        """fsync every segment holding data past the recovery point; the recovery point becomes the log end."""
        for segment in self.segments[self._segment_index(self.recovery_point):]:
            if segment.next_offset > self.recovery_point and not segment.is_empty:
                segment.fsync()
        self.recovery_point = self.log_end_offset
        self.last_flush_ms = now_ms

    def flush_if_due(self, now_ms: int) -> None:
        """flush.ms: flush when there is unflushed data and the last flush is that old."""
        if self.log_end_offset > self.recovery_point and now_ms - self.last_flush_ms >= self.config.flush_ms:
            self.flush(now_ms)

    def update_config(self, config: LogConfig) -> None:
        """Take new topic configs; index sizes apply to segments created from now on."""
        self.config = config
        self.active_segment.index_interval_bytes = config.index_interval_bytes

    def close(self) -> None:
        """Snapshot the producer state at the log end and close every file (no fsync: call `flush`)."""
        self.producer_state.write_snapshot(self.log_end_offset)
        for segment in self._deleted:
            segment.destroy()
        self._deleted = []
        for segment in self.segments:
            segment.close()

    def delete(self) -> None:
        """Close everything and remove the partition directory."""
        for segment in self._deleted + self.segments:
            segment.destroy()
        self._deleted = []
        self.segments = []
        shutil.rmtree(self.directory, ignore_errors=True)


def _write(segment: LogSegment, data: bytes | bytearray | memoryview, described: Sequence[tuple[int, int, int, int]],
           now_ms: int) -> None:
    """Append to the segment; a failed write (a full or failing disk) is KAFKA_STORAGE_ERROR for
    the caller and logged at ERROR here, once for every path that writes (produce, replication,
    the coordinators): it is the disk, not the request, and the operator must hear of it."""
    try:
        segment.append(data, described, now_ms)
    except OSError as error:
        log.error("write to %s failed: %s", segment.path, error)
        raise StorageError(ErrorCode.KAFKA_STORAGE_ERROR, f"write to {segment.path} failed: {error}") from error
