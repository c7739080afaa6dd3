"""What the synchronous and the asyncio producer share: configuration, routing, serialization,
partitioning and the append to the record accumulator, with no waiting in it; and the
transactional calls as coroutines on the network loop (the sync producer runs them on its
network thread, the asyncio one awaits them).

A send has two steps that may have to wait: for a topic's metadata (up to `max.block.ms`) and
for `buffer.memory`. The subclasses wait in their own way (the sync `Producer` blocks its
caller; `gregor.aio.Producer` awaits); everything between the waits lives here, so both
encode, place and queue a record identically (murmur2 keys, sticky partitions, size limits).
"""

from __future__ import annotations

import abc
import asyncio
import itertools
import random
import time
from collections import deque
from time import time_ns
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from gregor.client.config import Role, parse_config
from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError, error_for
from gregor.client.group_metadata import ConsumerGroupMetadata
from gregor.client.interceptors import ProducerInterceptors, resolve_producer_interceptors
from gregor.client.network import NetworkClient, NetworkSettings, TopicMetadata, TopicPartition
from gregor.client.partitioner import (
    DefaultPartitioner, StickyPartition, choose_partition, partition_for_key, resolve_partitioner,
)
from gregor.client.producer.accumulator import RecordAccumulator
from gregor.client.producer.batch import (
    BATCH_HEADER_SIZE, NO_HEADERS, EncodedBatch, ProducerBatch, encode_headers, estimated_record_size,
)
from gregor.client.producer.future import Callback, RecordFuture, RecordMetadata
from gregor.client.producer.memory import BufferMemory, NoRoom
from gregor.client.producer.sender import Sender, SenderSettings
from gregor.client.producer.transaction_manager import TransactionHandle, TransactionManager
from gregor.client.producer.transaction_requests import TransactionRequests
from gregor.client.serialization import BytesSerializer, SerializationTypeError, resolve_serializer
from gregor.protocol.error_codes import ErrorCode
from gregor.records.compression import Compression

_CLIENT_NUMBERS = itertools.count(1)
_COMPRESSION = {"none": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
                "lz4": Compression.LZ4, "zstd": Compression.ZSTD}
_LEVEL_KEYS = {"gzip": "compression.gzip.level", "lz4": "compression.lz4.level", "zstd": "compression.zstd.level"}

HeadersArg = Mapping[str, "bytes | str | None"] | Iterable[tuple[str, "bytes | str | None"]] | None


class ProducerRecord(NamedTuple):
    """A record on its way out, as interceptors see it (before serialization)."""

    topic: str
    value: Any = None
    key: Any = None
    partition: int | None = None
    timestamp: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class RouteWait:
    """What a send waiting for its topic's metadata (up to max.block.ms) has heard: the error its
    timeout reports and chains. A broker's answer (a Kafka error code) stays the cause over a
    later request that got no answer (a client-side code, below 0), which says less."""

    __slots__ = ("topic", "max_block_s", "last_error", "cause")

    def __init__(self, topic: str, max_block_s: float) -> None:
        self.topic = topic
        self.max_block_s = max_block_s
        self.last_error = "no answer yet"
        self.cause: KafkaException | None = None

    def request_failed(self, error: KafkaException) -> None:
        """A metadata request failed, retriably."""
        if self.cause is None or self.cause.code < 0:
            self.last_error, self.cause = str(error), error

    def answered(self, error: KafkaException) -> None:
        """The broker answered the topic with a retriable error."""
        self.last_error, self.cause = error.name, error

    def timed_out(self) -> KafkaTimeoutError:
        """The timeout to raise (from `cause`)."""
        return KafkaTimeoutError(ClientErrorCode._TIMED_OUT, f"topic {self.topic!r} not present in metadata after "
                                 f"{self.max_block_s * 1000:.0f} ms (max.block.ms): {self.last_error}")


class Route:
    """What a send needs of a topic, rebuilt when its metadata changes.

    `topics` is the cluster's map of topics that holds `metadata` (None until one is known): the
    map is replaced whole on every metadata update, so the plain path's route serves while the
    cluster's map is still this one, one identity test (`follow` takes a new map that kept the
    topic's metadata). `queues` holds the accumulator's queue of each partition once a send
    looked it up, for `append_plain`."""

    __slots__ = ("metadata", "num_partitions", "available", "partitions", "sticky", "topics", "queues")

    def __init__(self, metadata: TopicMetadata, sticky: StickyPartition | None,
                 topics: Mapping[str, TopicMetadata] | None = None) -> None:
        self.metadata = metadata
        self.num_partitions = len(metadata.partitions)
        self.available = sorted(index for index, item in metadata.partitions.items() if item.leader >= 0)
        self.partitions = [TopicPartition(metadata.name, index) for index in range(max(metadata.partitions) + 1)]
        self.sticky = sticky
        self.topics: Mapping[str, TopicMetadata] | None = None
        if topics is not None:
            self.follow(topics)
        self.queues: list[deque[ProducerBatch] | None] = [None] * len(self.partitions)

    def follow(self, topics: Mapping[str, TopicMetadata]) -> bool:
        """Take `topics` as the map the route serves while current, if the topic's metadata in it
        is the route's own (an update that did not ask about this topic kept it): True then."""
        if topics.get(self.metadata.name) is self.metadata:
            self.topics = topics
            return True
        return False


class PreparedRecord(NamedTuple):
    """A serialized record with its partition chosen, ready for the accumulator."""

    topic_partition: TopicPartition
    timestamp: int
    key: bytes | None
    value: bytes | None
    encoded_headers: bytes
    size: int
    sticky: StickyPartition | None
    route: Route


class ProducerBase(abc.ABC):
    """The sans-IO part of a producer; subclasses own the network loop and the waiting."""

    role_name = "producer"

    def __init__(self, config: Mapping[str, Any] | None, kwargs: Mapping[str, Any],
                 memory: type[BufferMemory] = BufferMemory) -> None:
        parsed = parse_config(Role.PRODUCER, config, **kwargs)
        self.client_id = parsed["client.id"] or f"producer-{next(_CLIENT_NUMBERS)}"
        self._max_block_s = parsed["max.block.ms"] / 1000
        self._max_request_size = parsed["max.request.size"]
        self._buffer_memory = parsed["buffer.memory"]
        self._record_limit = min(self._max_request_size, self._buffer_memory)
        self._key_serializer = resolve_serializer(parsed["key.serializer"], "key.serializer")
        self._value_serializer = resolve_serializer(parsed["value.serializer"], "value.serializer")
        self._raw_keys = type(self._key_serializer) is BytesSerializer
        self._raw_values = type(self._value_serializer) is BytesSerializer
        self._partitioner = resolve_partitioner(
            parsed["partitioner.class"], batch_size=parsed["batch.size"],
            ignore_keys=parsed["partitioner.ignore.keys"],
            adaptive=parsed["partitioner.adaptive.partitioning.enable"], rng=random.Random())
        self._default_partitioner = self._partitioner if isinstance(self._partitioner, DefaultPartitioner) else None
        self._keys_place_records = self._default_partitioner is not None and not self._default_partitioner.ignore_keys
        self._interceptors: ProducerInterceptors = resolve_producer_interceptors(parsed["interceptor.classes"])
        self._intercepting = bool(self._interceptors)
        compression_name = parsed["compression.type"]
        level_key = _LEVEL_KEYS.get(compression_name)
        level = parsed[level_key] if level_key else None
        adaptive = self._default_partitioner is not None and self._default_partitioner.adaptive
        self._memory = memory(self._buffer_memory)
        self._accumulator = RecordAccumulator(
            batch_size=parsed["batch.size"], linger_s=parsed["linger.ms"] / 1000,
            delivery_timeout_s=parsed["delivery.timeout.ms"] / 1000, max_block_s=self._max_block_s,
            memory=self._memory,
            load_stats=self._default_partitioner.update_load_stats if adaptive else None,
            availability_timeout_s=parsed["partitioner.availability.timeout.ms"] / 1000)
        self._network = NetworkClient(NetworkSettings.from_config({**parsed, "client.id": self.client_id}))
        self._cluster = self._network.cluster
        self._sender = Sender(self._network, self._accumulator, SenderSettings(
            acks=parsed["acks"], retries=parsed["retries"], request_timeout_ms=parsed["request.timeout.ms"],
            max_in_flight=parsed["max.in.flight.requests.per.connection"],
            max_request_size=self._max_request_size, compression=_COMPRESSION[compression_name],
            compression_level=None if level is None or level < 0 else level,
            idempotent=parsed["enable.idempotence"], transaction_timeout_ms=parsed["transaction.timeout.ms"],
            transactional_id=parsed["transactional.id"]))
        self._txn: TransactionManager | None = None
        if parsed["transactional.id"] is not None:
            self._txn = TransactionManager(parsed["transactional.id"])
            self._sender.transactions = TransactionRequests(
                self._network, self._txn, self._sender.identity, parsed["transaction.timeout.ms"],
                parsed["request.timeout.ms"])
        self._routes: dict[str, Route] = {}
        self._closed = False
        plain = not self._intercepting and self._txn is None and self._raw_keys and self._raw_values
        self._plain_value_limit = self._record_limit - BATCH_HEADER_SIZE - estimated_record_size(None, b"", NO_HEADERS) \
            if plain else -1
        """The largest value a send of a bytes value without key, partition, timestamp or headers
        may have to take the plain path (`_append_plain`; max.request.size, buffer.memory); -1
        where there are interceptors, a transaction or serializers to run, or once the producer is
        closed (`_close_plain_path`)."""

    # -- the steps of a send --

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaException(ClientErrorCode._STATE, "cannot send after the producer has been closed")

    def _intercept(self, record: ProducerRecord, callback: Callback | None) -> tuple[ProducerRecord, Callback]:
        """The record as `interceptor.classes` rewrote it, and a callback that tells them the outcome."""
        record = self._interceptors.on_send(record)
        record = record._replace(headers=header_items(record.headers))
        interceptors = self._interceptors

        def acknowledge(metadata: RecordMetadata | None, error: KafkaException | None) -> None:
            interceptors.on_acknowledgement(metadata, error)
            if callback is not None:
                callback(metadata, error)
        return record, acknowledge

    def _known_route(self, topic: str, partition: int | None) -> Route | None:
        """The topic's route when the current metadata serves this send, else None (wait for it)."""
        route = self._routes.get(topic)
        if route is None or route.metadata is not self._cluster.topics.get(topic) or \
                (partition is not None and not 0 <= partition < route.num_partitions):
            metadata = self._cluster.topics.get(topic)
            if metadata is None or not metadata.partitions or (partition is not None
                                                              and partition not in metadata.partitions):
                return None
            return self._new_route(metadata)
        return route

    def _new_route(self, metadata: TopicMetadata) -> Route:
        topic = metadata.name
        sticky = self._default_partitioner.sticky_for(topic) if self._default_partitioner is not None else None
        route = self._routes[topic] = Route(metadata, sticky, self._cluster.topics)
        return route

    def _metadata_answer(self, topic: str, partition: int | None, metadata: TopicMetadata | None,
                         code: int | None) -> Route | KafkaException | None:
        """What a metadata answer means for a send: its route, a retriable error to wait out
        (None: no answer about the topic yet); a final error raises."""
        if metadata is not None and metadata.partitions:
            if partition is None or partition in metadata.partitions:
                return self._new_route(metadata)
            raise KafkaException(ClientErrorCode._UNKNOWN_PARTITION,
                                 f"partition {partition} of topic {topic!r} does not exist (it has "
                                 f"partitions 0 to {len(metadata.partitions) - 1})")
        if code is not None:
            error = error_for(code, f"topic {topic!r}")
            if not error.retriable:
                raise error
            return error
        return None

    async def _fetch_metadata(self, topic: str, timeout_ms: float) -> tuple[TopicMetadata | None, int | None]:
        """Refresh the wanted topics' metadata (creating `topic` where the broker auto-creates)."""
        if not topic:
            raise KafkaException(ErrorCode.INVALID_TOPIC_EXCEPTION, "the topic name is empty")
        cluster = self._network.cluster
        cluster.wanted_topics.add(topic)
        await self._network.refresh_metadata(sorted(cluster.wanted_topics), allow_auto_topic_creation=True,
                                             timeout_ms=timeout_ms)
        return cluster.topics.get(topic), cluster.topic_errors.get(topic)

    def _close_plain_path(self) -> None:
        """Closing: later sends take the checked path, which refuses them."""
        self._plain_value_limit = -1

    def _append_plain(self, topic: str, value: bytes, callback: Callback | None) -> RecordFuture | None:
        """The most common send, in one frame: a bytes value without key, partition, timestamp or
        headers, for a known topic's sticky partition, appended to that partition's open batch
        (what `_queue` does for it, without the checks that cannot apply). None where anything
        more is needed (a route to make, a batch to open, interceptors, serializers, a
        transaction, a closed producer): the caller then takes the full path."""
        route = self._routes.get(topic)
        if route is None or len(value) > self._plain_value_limit:
            return None
        topics = self._cluster.topics
        if route.topics is not topics and not route.follow(topics):
            return None
        sticky = route.sticky
        chosen = sticky.current if sticky is not None else None
        if chosen is None or chosen >= route.num_partitions:
            return None
        queue = route.queues[chosen]
        if queue is None:
            queue = route.queues[chosen] = self._accumulator.queue_of(route.partitions[chosen])
        future = self._accumulator.append_plain(queue, time_ns() // 1_000_000, value, callback)
        if future is not None:
            # record_appended(enable_switch=False), inlined: the batch is neither full nor new,
            # so the partition moves on only at twice the sticky batch size
            record_size = 22 + len(value)  # estimated_record_size, inlined
            produced = sticky.produced_bytes + record_size
            if produced < sticky.forced_switch_bytes:
                sticky.produced_bytes = produced
            else:
                self._appended(route, sticky, record_size, False, False)
        return future

    def _queue(self, route: Route, topic: str, value: Any, key: Any, partition: int | None,
               timestamp: int | None, header_items: Sequence[tuple[str, bytes | None]],
               callback: Callback | None, deadline: float | None) -> RecordFuture:
        """Serialize, choose the partition, check the size and append: the whole of a send once
        its topic's route is known, in one frame (the per-record hot path). A buffer.memory that
        cannot wait raises NoRoom carrying the prepared record, to be appended with `_append`."""
        if self._raw_keys and (key is None or type(key) is bytes):
            key_bytes = key
        else:
            try:
                key_bytes = self._key_serializer.serialize(topic, key, header_items)
            except SerializationTypeError as error:
                raise SerializationTypeError(f"key: {error}") from None
        if self._raw_values and (value is None or type(value) is bytes):
            value_bytes = value
        else:
            try:
                value_bytes = self._value_serializer.serialize(topic, value, header_items)
            except SerializationTypeError as error:
                raise SerializationTypeError(f"value: {error}") from None
        sticky = None
        if partition is not None:
            chosen = partition
        elif key_bytes is not None and self._keys_place_records:
            chosen = partition_for_key(key_bytes, route.num_partitions)
        elif route.sticky is not None:
            sticky = route.sticky
            chosen = sticky.current
            if chosen is None or chosen >= route.num_partitions:
                chosen = sticky.partition(route.num_partitions, route.available)
        else:
            try:
                chosen = choose_partition(self._partitioner, topic, None, key_bytes, value_bytes,
                                          route.num_partitions, route.available)
            except ValueError as error:
                raise KafkaException(ClientErrorCode._UNKNOWN_PARTITION, str(error)) from None
        encoded_headers = encode_headers(header_items) if header_items else NO_HEADERS
        record_size = 21 + len(encoded_headers) + (len(key_bytes) if key_bytes is not None else 0) \
            + (len(value_bytes) if value_bytes is not None else 0)  # estimated_record_size, inlined
        if record_size + BATCH_HEADER_SIZE > self._record_limit:
            limit, key_name = min((self._max_request_size, "max.request.size"),
                                  (self._buffer_memory, "buffer.memory"))
            raise KafkaException(ErrorCode.MESSAGE_TOO_LARGE,
                                 f"the record is {record_size + BATCH_HEADER_SIZE} bytes when serialized, "
                                 f"more than {key_name} ({limit})")
        if timestamp is None:
            timestamp = time_ns() // 1_000_000
        if self._txn is not None:
            self._txn.check_send()
            self._txn.add_partition(route.partitions[chosen])
        try:
            future, batch_full, new_batch = self._accumulator.append(
                route.partitions[chosen], timestamp, key_bytes, value_bytes, encoded_headers, callback, deadline)
        except NoRoom as no_room:
            no_room.record = PreparedRecord(route.partitions[chosen], timestamp, key_bytes, value_bytes,
                                            encoded_headers, record_size, sticky, route)
            raise
        if sticky is not None:
            produced = sticky.produced_bytes + record_size
            if produced < sticky.forced_switch_bytes and not (batch_full or new_batch):
                # record_appended(enable_switch=False), inlined: below twice the size, no switch yet
                sticky.produced_bytes = produced
                return future
        elif not (batch_full or new_batch):
            return future
        self._appended(route, sticky, record_size, batch_full, new_batch)
        return future

    def _appended(self, route: Route, sticky: StickyPartition | None, record_size: int, batch_full: bool,
                  new_batch: bool) -> None:
        """After an append that filled or opened a batch or moves the sticky partition on: count
        the bytes for the sticky partitioner and wake the sender when it has something to send."""
        if sticky is not None:
            sticky.record_appended(record_size, route.num_partitions, route.available,
                                   enable_switch=batch_full or new_batch)
        if batch_full or (new_batch and self._sender.sleeping_until > time.monotonic() + self._accumulator.linger_s):
            self._wake_sender()

    def _append(self, record: PreparedRecord, callback: Callback | None, deadline: float | None) -> RecordFuture:
        """Append a record `_queue` prepared (after its NoRoom); raises NoRoom again if still no room."""
        future, batch_full, new_batch = self._accumulator.append(
            record.topic_partition, record.timestamp, record.key, record.value, record.encoded_headers,
            callback, deadline)
        sticky = record.sticky
        if sticky is not None:
            route = record.route
            sticky.record_appended(record.size, route.num_partitions, route.available,
                                   enable_switch=batch_full or new_batch)
        if batch_full or new_batch:
            self._wake_sender()
        return future

    # -- columnar produce --

    @staticmethod
    def _record_columns(values: Any, keys: Any, timestamps: Any, headers: Any, partitions: Any) -> Any:
        """The rows of a columnar send as Arrow columns (pyarrow is needed for columnar sends only)."""
        try:
            from gregor.client.producer.columns import record_columns
        except ModuleNotFoundError as error:
            if error.name != "pyarrow":
                raise
            raise ModuleNotFoundError("send_columns needs pyarrow (pip install pyarrow)", name="pyarrow") from None
        return record_columns(values, keys, timestamps=timestamps, headers=headers, partitions=partitions)

    def _columnar_plan(self, topic: str, route: Route, columns: Any,
                       partition: int | None) -> list[tuple[TopicPartition, EncodedBatch]]:
        """Place the rows (`partition`, else their partition column, else murmur2 of their key, else
        the partitioner per batch) and encode them into batches of about `batch.size` bytes."""
        from gregor.client.producer import columns as encoding  # loaded by _record_columns already

        if self._intercepting:
            raise KafkaException(ClientErrorCode._STATE, "columnar sends bypass interceptor.classes; "
                                                         "use send with interceptors")
        count = len(columns)
        if not count:
            return []
        largest = encoding.pc.max(columns.upper_bound_sizes()).as_py() + 5
        if largest + BATCH_HEADER_SIZE > self._record_limit:
            limit, key_name = min((self._max_request_size, "max.request.size"), (self._buffer_memory, "buffer.memory"))
            raise KafkaException(ErrorCode.MESSAGE_TOO_LARGE, f"a record is up to {largest + BATCH_HEADER_SIZE} "
                                                              f"bytes when serialized, more than {key_name} ({limit})")
        groups = encoding.partition_groups(columns, partition, route.num_partitions,
                                           self._keys_place_records)
        plan: list[tuple[TopicPartition, EncodedBatch]] = []
        batch_size = self._accumulator.batch_size
        if self._txn is not None:
            self._txn.check_send()
        for chosen, rows in groups:
            encoded = encoding.encode_batches(rows, encoding.batch_bounds(rows, batch_size))
            for batch in encoded:
                target = chosen if chosen >= 0 else self._partition_for_batch(topic, route, len(batch.records))
                plan.append((route.partitions[target], batch))
                if self._txn is not None:
                    self._txn.add_partition(route.partitions[target])
        return plan

    def _partition_for_batch(self, topic: str, route: Route, size: int) -> int:
        """A batch of keyless rows: the sticky partition, which moves on after each batch."""
        sticky = route.sticky
        if sticky is None:
            try:
                return choose_partition(self._partitioner, topic, None, None, None, route.num_partitions,
                                        route.available)
            except ValueError as error:
                raise KafkaException(ClientErrorCode._UNKNOWN_PARTITION, str(error)) from None
        chosen = sticky.partition(route.num_partitions, route.available)
        sticky.record_appended(size, route.num_partitions, route.available, enable_switch=True)
        return chosen

    # -- transactions (coroutines on the network loop) --

    def _transactions(self, call: str) -> tuple[TransactionManager, TransactionRequests]:
        self._check_open()
        if self._txn is None or self._sender.transactions is None:
            raise KafkaException(ClientErrorCode._STATE, f"{call} needs a transactional producer: "
                                                         f"set transactional.id")
        return self._txn, self._sender.transactions

    def _txn_deadline(self, timeout: float | None) -> float:
        """`timeout` seconds from now; None means max.block.ms, as the Java client's default."""
        return time.monotonic() + (self._max_block_s if timeout is None else timeout)

    def _begin_transaction(self) -> None:
        manager, _ = self._transactions("begin_transaction")
        manager.begin_transaction()

    def transaction_handle(self) -> TransactionHandle:
        """The open transaction's transactional id, producer id and epoch, for another process to
        commit or abort it with `resume_transaction` (two-phase commit, as Flink's Kafka sink).
        Call it after `flush()`; then close this producer without ending the transaction."""
        manager, _ = self._transactions("transaction_handle")
        manager.check_in_transaction("transaction_handle")
        identity = self._sender.identity
        return TransactionHandle(manager.transactional_id, identity.producer_id, identity.producer_epoch)

    def resume_transaction(self, handle: TransactionHandle) -> None:
        """Take over the open transaction of `handle` (from `transaction_handle()` of a producer
        with the same transactional.id, in any process) instead of `init_transactions()`: only
        `commit_transaction()` or `abort_transaction()` may follow. A commit raises
        ProducerFencedError when the transaction was aborted meanwhile (timed out, or a newer
        producer initialized the id): its records are gone."""
        manager, _ = self._transactions("resume_transaction")
        if handle.transactional_id != manager.transactional_id:
            raise KafkaException(ClientErrorCode._INVALID_ARG, f"the handle is for transactional id "
                                 f"{handle.transactional_id!r}, this producer has {manager.transactional_id!r}")
        manager.resume()
        self._sender.identity.set(handle.producer_id, handle.producer_epoch)

    async def _init_transactions(self, deadline: float) -> None:
        manager, requests = self._transactions("init_transactions")
        manager.begin_init()
        await requests.init_producer_id(deadline)
        manager.initialized()
        self._sender.wakeup()

    async def _send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any],
                                           group_metadata: ConsumerGroupMetadata | str, deadline: float) -> None:
        manager, requests = self._transactions("send_offsets_to_transaction")
        group = ConsumerGroupMetadata(group_metadata) if isinstance(group_metadata, str) else group_metadata
        if not isinstance(group, ConsumerGroupMetadata) or not group.group_id:
            raise KafkaException(ClientErrorCode._INVALID_ARG, "group_metadata must be a consumer's "
                                                               "group_metadata() (or a non-empty group id)")
        normalized = _txn_offsets(offsets)
        manager.check_in_transaction("send_offsets_to_transaction")
        await requests.add_offsets(group.group_id, deadline)
        await requests.txn_offset_commit(normalized, group, deadline)

    async def _commit_transaction(self, deadline: float) -> None:
        manager, requests = self._transactions("commit_transaction")
        manager.begin_commit()
        await self._await_batches(deadline, flush=True)
        manager.begin_commit()  # raises the error of a record that failed in the transaction
        if manager.transaction_started:
            await requests.end_txn(True, deadline)
        manager.completed()

    async def _abort_transaction(self, deadline: float) -> None:
        manager, requests = self._transactions("abort_transaction")
        manager.begin_abort()
        self._sender.wakeup()  # fails the batches not sent yet
        await self._await_batches(deadline, flush=False)
        if manager.epoch_bump_required:
            await requests.init_producer_id(deadline)
            manager.initialized()
        else:
            if manager.transaction_started:
                await requests.end_txn(False, deadline)
            manager.completed()

    async def _await_batches(self, deadline: float, *, flush: bool) -> None:
        """Wait (on the network loop) until every batch queued now is acknowledged or failed;
        `flush` makes them sendable at once, as `flush()` does."""
        batches = self._accumulator.begin_flush() if flush else self._accumulator.incomplete()
        try:
            self._sender.wakeup()
            waits = [_completion(batch.result) for batch in batches]
            if waits:
                try:
                    async with asyncio.timeout(max(deadline - time.monotonic(), 0)):
                        await asyncio.gather(*waits)
                except TimeoutError:
                    raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, "the transaction's records were not all "
                                                                        "acknowledged in time") from None
        finally:
            if flush:
                self._accumulator.end_flush()

    @abc.abstractmethod
    def _wake_sender(self) -> None:
        """Wake the sender task from the thread that appended."""

    def _close_plugins(self) -> None:
        self._interceptors.close()
        self._partitioner.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.client_id}{' closed' if self._closed else ''}>"


def _txn_offsets(offsets: Mapping[TopicPartition, Any]) -> dict[TopicPartition, tuple[int, int | None, str]]:
    """`send_offsets_to_transaction`'s offsets (an int or an OffsetAndMetadata per partition) as
    (offset, leader epoch, metadata), checked."""
    normalized: dict[TopicPartition, tuple[int, int | None, str]] = {}
    for key, item in offsets.items():
        topic, partition = key
        if isinstance(item, int):
            normalized[TopicPartition(topic, partition)] = (item, None, "")
        elif hasattr(item, "offset"):
            normalized[TopicPartition(topic, partition)] = (
                item.offset, getattr(item, "leader_epoch", None), getattr(item, "metadata", "") or "")
        else:
            raise KafkaException(ClientErrorCode._INVALID_ARG, f"the offset for {topic}-{partition} must be an int "
                                                               f"or an OffsetAndMetadata, not {type(item).__name__}")
        if normalized[TopicPartition(topic, partition)][0] < 0:
            raise KafkaException(ClientErrorCode._INVALID_ARG, f"the offset for {topic}-{partition} is negative")
    return normalized


def _completion(result: Any) -> asyncio.Future[None]:
    """A future of the running loop that is done when the batch result is."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def done() -> None:
        if not future.done():
            future.set_result(None)
    if not result.add_done_callback(done):
        done()
    return future


def header_items(headers: HeadersArg | Sequence[tuple[str, Any]]) -> tuple[tuple[str, bytes | None], ...]:
    """Headers as (name, bytes or None) pairs; str values are UTF-8 encoded."""
    if not headers:
        return ()
    items = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    for name, value in items:
        if not isinstance(name, str):
            raise TypeError(f"a header name must be str, not {type(name).__name__}")
        if isinstance(value, str):
            value = value.encode("utf-8")
        elif value is not None and not isinstance(value, bytes):
            value = bytes(value)
        out.append((name, value))
    return tuple(out)
