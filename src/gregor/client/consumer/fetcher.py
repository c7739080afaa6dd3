"""Fetching: a prefetch loop on the network thread and record collection on the caller's.

The loop keeps one Fetch in flight per leader for the assigned, unpaused partitions that have a
position and no unconsumed data buffered; each answered partition becomes a `CompletedFetch`
(raw bytes, decoded lazily: v2 batches, or legacy v0/v1 message sets from old
brokers). `Fetcher.collect`, on the application thread, turns buffered
fetches into records up to `max.poll.records`, skipping records before the position, control
batches and, under read_committed, the batches of aborted transactions (as Java's
CompletedFetch does with the response's aborted transactions), and advances positions.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import logging
import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from gregor.client.consumer.batch_decoder import RecordColumns, decode_batch
from gregor.client.consumer.poll_decoder import BatchRecords, ListRecords, batch_records
from gregor.client.consumer.records import ConsumerRecord, RecordChunk
from gregor.client.consumer.subscription import SubscriptionState
from gregor.client.errors import ClientErrorCode, KafkaException, error_for
from gregor.client.network import STALE_METADATA_ERRORS, NetworkClient, TopicPartition
from gregor.client.serialization import BytesDeserializer, Deserializer, SerializationError
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest
from gregor.records.batch import LOG_OVERHEAD, MAGIC_V2, BatchHeader, magic_of, parse_header, verify_crc
from gregor.records.errors import RecordsError
from gregor.records.legacy import iter_legacy
from gregor.records.record import CONTROL_ABORT, control_record_type, decode_records

log = logging.getLogger(__name__)

FETCH_VERSIONS = (4, 12)  # v4: LSO and aborted transactions; v13+ (topic ids) not implemented
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
_MAX_UNCOMPRESSED = 256 * 1024 * 1024
_ENTRY_PREFIX = struct.Struct(">qi")


@dataclass(frozen=True)
class FetchSettings:
    min_bytes: int
    max_bytes: int
    max_wait_ms: int
    partition_max_bytes: int
    isolation_level: int
    check_crcs: bool
    request_timeout_ms: int


class RecordDeserializationError(KafkaException):
    """A key or value the deserializer refused; seek past `offset` to go on."""

    def __init__(self, topic_partition: TopicPartition, offset: int, cause: BaseException) -> None:
        super().__init__(ClientErrorCode._BAD_MSG,
                         f"cannot deserialize the record at offset {offset} of {topic_partition.topic}-"
                         f"{topic_partition.partition}: {cause}; seek past it to continue")
        self.topic_partition = topic_partition
        self.offset = offset


class CompletedFetch:
    """One partition's answer to one Fetch, consumed a batch of records at a time
    (`take_records`) or, by bulk readers, of columns (`take_columns`); the two may take turns."""

    def __init__(self, topic_partition: TopicPartition, fetch_offset: int, partition: Any,
                 isolation_level: int, check_crcs: bool) -> None:
        self.topic_partition = topic_partition
        self.fetch_offset = fetch_offset
        self.error_code = partition.error_code
        self.high_watermark = partition.high_watermark
        self.last_stable_offset = partition.last_stable_offset
        self.log_start_offset = partition.log_start_offset
        self.next_offset = fetch_offset
        self._data = partition.records
        self._aborted = sorted((item.first_offset, item.producer_id)
                               for item in partition.aborted_transactions or ())
        self._read_committed = isolation_level == READ_COMMITTED
        self._check_crcs = check_crcs
        self._batches: Iterator[tuple[BatchRecords, int]] | None = None
        self._batch: BatchRecords | None = None  # the batch `take_records` is in
        self._batch_end = 0  # the offset after it
        self._chunks: Iterator[tuple[RecordColumns, int, int, int]] | None = None
        self._leftover: tuple[RecordColumns, int, int, int] | None = None

    def take_records(self, limit: int) -> list[ConsumerRecord] | None:
        """At most `limit` records (raw keys and values) from the position on, all of one batch,
        built now (see `poll_decoder`); None when the fetch is used up. `next_offset` is the
        position after them."""
        while True:
            batch = self._batch
            if batch is None:
                if self._batches is None:
                    self._batches = self._record_batches()
                item = next(self._batches, None)
                if item is None:
                    return None
                batch, self._batch_end = item
                self._batch = batch
            records = batch.take(limit) if batch.remaining else []
            if records and records[0].offset < self.next_offset:  # the fetch began inside the batch, or
                records = records[bisect.bisect_left(records, self.next_offset, key=_offset):]  # poll_columns took some
            if not batch.remaining:
                self._batch = None
                self.next_offset = max(self.next_offset, self._batch_end)
            elif records:
                self.next_offset = records[-1].offset + 1
            if records:
                return records

    def take_columns(self, limit: int) -> tuple[RecordColumns, int, int] | None:
        """(columns, leader epoch, timestamp type) of at most `limit` records from the position on
        (one batch, or the part of one that fits); None when the fetch is used up. `next_offset`
        is the position after them."""
        while True:
            if self._leftover is None:
                if self._chunks is None:
                    self._chunks = self._column_chunks()
                self._leftover = next(self._chunks, None)
                if self._leftover is None:
                    return None
            columns, epoch, timestamp_type, end = self._leftover
            taken_by_poll = bisect.bisect_left(columns.offsets, self.next_offset)
            if taken_by_poll < len(columns):
                break
            self._leftover = None
        if taken_by_poll:
            columns = columns.slice(taken_by_poll)
        if len(columns) <= limit:
            self._leftover = None
            self.next_offset = end
            return columns, epoch, timestamp_type
        rest = columns.slice(limit)
        self._leftover = rest, epoch, timestamp_type, end
        self.next_offset = rest.offsets[0]
        return columns.slice(0, limit), epoch, timestamp_type

    def _selected(self) -> Iterator[tuple[BatchHeader | None, int, int]]:
        """The entries whose records the application sees (header None: a legacy v0/v1 entry),
        after the CRC check; control batches and, under read_committed, aborted transactions are
        skipped here, moving `next_offset` past them."""
        data = self._data
        if not data:
            return
        aborted_producers: set[int] = set()
        pending_aborts = collections.deque(self._aborted)
        for header, start, end in record_entries(data):
            if header is None:
                yield header, start, end
                continue
            if header.last_offset < self.next_offset:
                continue
            if self._check_crcs and not verify_crc(data, start, header):
                raise KafkaException(ErrorCode.CORRUPT_MESSAGE,
                                     f"record batch at offset {header.base_offset} of {self.topic_partition.topic}-"
                                     f"{self.topic_partition.partition} fails its CRC32C")
            if self._read_committed and header.has_producer_id:
                while pending_aborts and pending_aborts[0][0] <= header.last_offset:
                    aborted_producers.add(pending_aborts.popleft()[1])
                if header.is_control:
                    records = decode_records(data, start, header, _MAX_UNCOMPRESSED)
                    if records and control_record_type(records[0]) == CONTROL_ABORT:
                        aborted_producers.discard(header.producer_id)
                elif header.is_transactional and header.producer_id in aborted_producers:
                    self.next_offset = header.last_offset + 1
                    continue
            if header.is_control:
                self.next_offset = header.last_offset + 1
                continue
            yield header, start, end

    def _record_batches(self) -> Iterator[tuple[BatchRecords, int]]:
        """(records, offset after them) per batch, records before the position included (the
        taker skips them); `take_records` moves `next_offset` as they are taken."""
        data = self._data
        topic, partition = self.topic_partition
        for header, start, end in self._selected():
            if header is None:
                records = self._legacy_records(memoryview(data)[start:end])
                if records:
                    yield ListRecords(records), records[-1].offset + 1
                continue
            yield batch_records(data, start, header, _MAX_UNCOMPRESSED, topic, partition), \
                max(self.next_offset, header.last_offset + 1)

    def _column_chunks(self) -> Iterator[tuple[RecordColumns, int, int, int]]:
        """(columns, leader epoch, timestamp type, offset after them) per batch from the position on;
        `take_columns` moves `next_offset` as they are taken."""
        data = self._data
        for header, start, end in self._selected():
            if header is None:
                yield from self._legacy_columns(memoryview(data)[start:end])
                continue
            columns = decode_batch(data, start, header, _MAX_UNCOMPRESSED)
            first = bisect.bisect_left(columns.offsets, self.next_offset)
            end_offset = max(self.next_offset, header.last_offset + 1)
            if first < len(columns):
                yield (columns.slice(first) if first else columns), header.partition_leader_epoch, \
                    header.timestamp_type, end_offset
            else:
                self.next_offset = end_offset

    def _legacy_columns(self, entry: memoryview) -> Iterator[tuple[RecordColumns, int, int, int]]:
        """A magic 0/1 entry as columns, one chunk per run of messages with the same timestamp type."""
        columns, timestamp_type = RecordColumns(), None
        for message in iter_legacy(entry, _MAX_UNCOMPRESSED):
            if message.offset < self.next_offset:
                continue
            if columns and message.timestamp_type != timestamp_type:
                yield columns, -1, timestamp_type, columns.offsets[-1] + 1
                columns = RecordColumns()
            timestamp_type = message.timestamp_type
            columns.offsets.append(message.offset)
            columns.timestamps.append(message.timestamp)
            columns.keys.append(message.key)
            columns.values.append(message.value)
            columns.headers.append(())
        if columns:
            yield columns, -1, timestamp_type, columns.offsets[-1] + 1

    def _legacy_records(self, entry: memoryview) -> list[ConsumerRecord]:
        """A magic 0/1 entry (a wrapper expands to its messages) from the position on; its CRC is
        always checked."""
        topic, partition = self.topic_partition
        return [ConsumerRecord(topic, partition, message.offset, message.timestamp, message.timestamp_type,
                               message.key, message.value, None, None,
                               -1 if message.key is None else len(message.key),
                               -1 if message.value is None else len(message.value))
                for message in iter_legacy(entry, _MAX_UNCOMPRESSED) if message.offset >= self.next_offset]


def _offset(record: ConsumerRecord) -> int:
    return record.offset


def record_entries(data: bytes | memoryview) -> Iterator[tuple[BatchHeader | None, int, int]]:
    """(v2 batch header, or None for a legacy v0/v1 entry; start; end) of each complete entry.
    A fetch may end inside an entry (the size limits cut it): that tail is not returned."""
    position, size = 0, len(data)
    while size - position >= LOG_OVERHEAD:
        _, length = _ENTRY_PREFIX.unpack_from(data, position)
        if length <= 0:
            raise RecordsError(ErrorCode.CORRUPT_MESSAGE, f"record entry length {length} at position {position}")
        end = position + LOG_OVERHEAD + length
        if end > size:
            return
        yield (parse_header(data, position) if magic_of(data, position) == MAGIC_V2 else None), position, end
        position = end


class Fetcher:
    def __init__(self, network: NetworkClient, subscriptions: SubscriptionState, settings: FetchSettings,
                 key_deserializer: Deserializer, value_deserializer: Deserializer) -> None:
        self.network = network
        self.subscriptions = subscriptions
        self.settings = settings
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self._completed: collections.deque[CompletedFetch] = collections.deque()
        self._buffered: set[TopicPartition] = set()
        self._lock = threading.Lock()
        self.data_ready = threading.Condition(self._lock)
        self._in_flight: set[int] = set()
        self._wakeup: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()
        self.on_data: Callable[[], None] | None = None  # called on the loop when fetched data arrives
        self.freed = False  # see take_freed

    # -- network thread --

    def wakeup(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def run(self) -> None:
        self._wakeup = asyncio.Event()
        try:
            while True:
                self._send_fetches()
                try:
                    async with asyncio.timeout(0.1):
                        await self._wakeup.wait()
                except TimeoutError:
                    pass
                self._wakeup.clear()
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _send_fetches(self) -> None:
        cluster = self.network.cluster
        with self._lock:
            buffered = set(self._buffered)
        by_node: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        unknown_leader = False
        for partition, position in self.subscriptions.fetch_targets():
            if partition in buffered:
                continue
            metadata = cluster.partition(partition)
            if metadata is None or metadata.leader < 0 or metadata.leader not in cluster.brokers:
                unknown_leader = True
                continue
            if metadata.leader in self._in_flight:
                continue
            by_node.setdefault(metadata.leader, []).append((partition, position, metadata.leader_epoch))
        if unknown_leader:
            self.network.request_metadata_update()
        for node, targets in by_node.items():
            self._in_flight.add(node)
            task = asyncio.get_running_loop().create_task(self._fetch(node, targets))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _fetch(self, node: int, targets: list[tuple[TopicPartition, int, int]]) -> None:
        """One Fetch to `node`; the leader epoch sent is the one metadata knows (a newer
        leader answers FENCED_LEADER_EPOCH, which refreshes metadata)."""
        settings = self.settings
        by_topic: dict[str, list[FetchRequest.FetchPartition]] = {}
        for partition, position, leader_epoch in targets:
            by_topic.setdefault(partition.topic, []).append(FetchRequest.FetchPartition(
                partition=partition.partition, fetch_offset=position, current_leader_epoch=leader_epoch,
                partition_max_bytes=settings.partition_max_bytes))
        request = FetchRequest(
            replica_id=-1, max_wait_ms=settings.max_wait_ms, min_bytes=settings.min_bytes,
            max_bytes=settings.max_bytes, isolation_level=settings.isolation_level, session_id=0,
            session_epoch=-1, rack_id="",
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=partitions) for topic, partitions in by_topic.items()])
        positions = {partition: position for partition, position, _ in targets}
        try:
            response = await self.network.send(request, node, versions=FETCH_VERSIONS,
                                               timeout_ms=settings.request_timeout_ms + settings.max_wait_ms)
        except KafkaException as error:
            if error.code != ClientErrorCode._DESTROY:
                log.debug("fetch from node %d failed: %s", node, error)
                self.network.request_metadata_update()
                await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)
            return
        finally:
            self._in_flight.discard(node)
            self.wakeup()
        if response.error_code != ErrorCode.NONE:
            log.debug("fetch from node %d answered %s", node, error_for(response.error_code))
            return
        completed = []
        for topic in response.responses:
            for partition in topic.partitions:
                key = TopicPartition(topic.topic, partition.partition_index)
                if key not in positions:
                    continue
                if partition.error_code in STALE_METADATA_ERRORS:
                    self.network.request_metadata_update()
                if partition.error_code == ErrorCode.NONE and not partition.records:
                    self._note_offsets(key, partition)
                    continue
                completed.append(CompletedFetch(key, positions[key], partition, settings.isolation_level,
                                                settings.check_crcs))
        if completed:
            self.add(completed)

    def add(self, completed: list[CompletedFetch]) -> None:
        """Buffer answered partitions for the application thread and wake a waiting poll."""
        with self._lock:
            for item in completed:
                self._completed.append(item)
                self._buffered.add(item.topic_partition)
            self.data_ready.notify_all()
        if self.on_data is not None:
            self.on_data()

    def _note_offsets(self, partition: TopicPartition, data: Any) -> None:
        state = self.subscriptions.assignment.get(partition)
        if state is not None:
            state.high_watermark = data.high_watermark
            state.last_stable_offset = data.last_stable_offset
            state.log_start_offset = data.log_start_offset

    # -- application thread --

    def has_data(self) -> bool:
        return bool(self._completed)

    def clear_buffer(self) -> None:
        with self._lock:
            self._completed.clear()
            self._buffered.clear()

    def collect(self, max_records: int) -> tuple[dict[TopicPartition, list[ConsumerRecord]], KafkaException | None]:
        """Records for the application (at most `max_records`) and an error to raise after
        handing them over, if one stopped the collection."""
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        return out, self._drain(max_records, lambda fetch, state, limit: self._take(fetch, state, out, limit))

    def collect_columns(self, max_records: int) -> tuple[list[RecordChunk], KafkaException | None]:
        """As `collect`, as column chunks of raw keys and values (the deserializers are not applied)."""
        out: list[RecordChunk] = []
        return out, self._drain(max_records, lambda fetch, state, limit: self._take_columns(fetch, state, out, limit))

    def _drain(self, max_records: int, take: Callable[[CompletedFetch, Any, int], int]) -> KafkaException | None:
        """Hand buffered fetches to `take` (which returns how many records it took) until
        `max_records` are taken or the buffer is empty; the error that stopped it, if any."""
        count = 0
        while count < max_records:
            with self._lock:
                if not self._completed:
                    break
                fetch = self._completed[0]
            state = self.subscriptions.assignment.get(fetch.topic_partition)
            if state is None or state.paused or state.pending_revocation or state.position != fetch.next_offset:
                self._done_with(fetch)
                continue
            if fetch.error_code != ErrorCode.NONE:
                self._done_with(fetch)
                error = self._partition_error(fetch)
                if error is not None:
                    return error
                continue
            self._note_offsets(fetch.topic_partition, fetch)
            try:
                count += take(fetch, state, max_records - count)
            except KafkaException as error:
                self._done_with(fetch)
                return error
            except RecordsError as error:
                self._done_with(fetch)
                return KafkaException(error.code, f"{fetch.topic_partition.topic}-"
                                                  f"{fetch.topic_partition.partition}: {error}")
        return None

    def _take_columns(self, fetch: CompletedFetch, state: Any, out: list[RecordChunk], limit: int) -> int:
        """Whole batches (the last one cut at `limit`) appended to `out`, merged into its last chunk
        while partition and timestamp type stay the same."""
        taken = 0
        while taken < limit:
            item = fetch.take_columns(limit - taken)
            if item is None:
                state.position = fetch.next_offset
                self._done_with(fetch)
                return taken
            columns, epoch, timestamp_type = item
            last = out[-1] if out else None
            if last is not None and last.topic_partition == fetch.topic_partition \
                    and last.timestamp_type == timestamp_type:
                last.columns.extend(columns)
                last.leader_epoch = epoch if epoch >= 0 else None
            else:
                out.append(RecordChunk(fetch.topic_partition, timestamp_type, epoch if epoch >= 0 else None, columns))
            taken += len(columns)
            state.position = fetch.next_offset
            state.position_epoch = epoch if epoch >= 0 else None
        return taken

    def _take(self, fetch: CompletedFetch, state: Any, out: dict[TopicPartition, list[ConsumerRecord]],
              limit: int) -> int:
        """Records of `fetch`, a batch at a time, deserialized and added to `out`; a record the
        deserializers refuse ends the take there (the records before it are handed over, the
        position stays on it)."""
        topic_partition = fetch.topic_partition
        taken = 0
        key_deserializer, value_deserializer = self.key_deserializer, self.value_deserializer
        raw = type(key_deserializer) is BytesDeserializer and type(value_deserializer) is BytesDeserializer
        while taken < limit:
            records = fetch.take_records(limit - taken)
            if records is None:
                state.position = fetch.next_offset
                self._done_with(fetch)
                return taken
            if not raw:
                self._deserialize(topic_partition, records, state, out)
            current = out.get(topic_partition)
            if current is None:
                out[topic_partition] = records
            else:
                current += records
            taken += len(records)
            state.position = fetch.next_offset
            state.position_epoch = records[-1].leader_epoch
        return taken

    def _deserialize(self, topic_partition: TopicPartition, records: list[ConsumerRecord], state: Any,
                     out: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        """Replace raw keys and values by what the deserializers make of them; on a refusal, hand
        over the records before it and raise RecordDeserializationError at its offset."""
        topic = topic_partition.topic
        key_deserializer, value_deserializer = self.key_deserializer, self.value_deserializer
        raw_keys = type(key_deserializer) is BytesDeserializer
        raw_values = type(value_deserializer) is BytesDeserializer
        for index, record in enumerate(records):
            try:
                if not raw_keys:
                    record.key = key_deserializer.deserialize(topic, record.key, record.headers)
                if not raw_values:
                    record.value = value_deserializer.deserialize(topic, record.value, record.headers)
            except (SerializationError, ValueError, TypeError) as cause:
                if index:
                    out.setdefault(topic_partition, []).extend(records[:index])
                    state.position_epoch = records[index - 1].leader_epoch
                state.position = record.offset
                raise RecordDeserializationError(topic_partition, record.offset, cause) from cause

    def _partition_error(self, fetch: CompletedFetch) -> KafkaException | None:
        code = fetch.error_code
        partition = fetch.topic_partition
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            strategy = self.subscriptions.default_reset
            if strategy == "none":
                return KafkaException(code, f"offset {fetch.fetch_offset} is out of range for {partition.topic}-"
                                            f"{partition.partition} and auto.offset.reset is none")
            self.subscriptions.request_reset([partition], strategy)
            return None
        error = error_for(code, f"{partition.topic}-{partition.partition}")
        if error.retriable or code in STALE_METADATA_ERRORS:
            return None
        return error

    def _done_with(self, fetch: CompletedFetch) -> None:
        with self._lock:
            if self._completed and self._completed[0] is fetch:
                self._completed.popleft()
            self._buffered.discard(fetch.topic_partition)
            self.freed = True

    def take_freed(self) -> bool:
        """Whether a partition's buffered answer was used up since the last call: only then can
        the loop send a fetch it could not send before (waking it is a thread switch)."""
        with self._lock:
            freed, self.freed = self.freed, False
            return freed
