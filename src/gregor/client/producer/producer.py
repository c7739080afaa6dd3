"""Gregor's Producer: Kafka's producer semantics for any Kafka-compatible cluster.

`send` runs on the caller's thread: interceptors, metadata (waiting up to `max.block.ms` for a
topic it has not seen), serializers, the partitioner, then an append to the record accumulator,
which encodes the record into its partition's open batch. A `Sender` on the producer's network
thread ships the batches. Many threads may share one producer.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from gregor.client.config import ConfigError, Role, parse_config
from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError, error_for
from gregor.client.interceptors import ProducerInterceptors, resolve_producer_interceptors
from gregor.client.network import (
    NetworkClient, NetworkSettings, NetworkThread, PartitionMetadata, TopicMetadata, TopicPartition,
)
from gregor.client.partitioner import (
    DefaultPartitioner, StickyPartition, choose_partition, partition_for_key, resolve_partitioner,
)
from gregor.client.producer.accumulator import RecordAccumulator
from gregor.client.producer.batch import BATCH_HEADER_SIZE, encode_headers
from gregor.client.producer.future import Callback, RecordFuture, RecordMetadata
from gregor.client.producer.memory import BufferMemory
from gregor.client.producer.sender import Sender, SenderSettings
from gregor.client.serialization import BytesSerializer, resolve_serializer
from gregor.protocol.error_codes import ErrorCode
from gregor.records.compression import Compression

log = logging.getLogger(__name__)

_CLIENT_NUMBERS = itertools.count(1)
_GRACE_SECONDS = 5.0
_NO_HEADERS = b"\x00"
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


class _Route:
    """What `send` needs of a topic, rebuilt when its metadata changes."""

    __slots__ = ("metadata", "num_partitions", "available", "partitions", "sticky")

    def __init__(self, metadata: TopicMetadata, sticky: StickyPartition | None) -> None:
        self.metadata = metadata
        self.num_partitions = len(metadata.partitions)
        self.available = sorted(index for index, item in metadata.partitions.items() if item.leader >= 0)
        self.partitions = [TopicPartition(metadata.name, index) for index in range(max(metadata.partitions) + 1)]
        self.sticky = sticky


class Producer:
    """Publishes records to topics (see the module doc); thread-safe."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Kafka's producer keys in `config` and/or as keyword arguments with underscores
        (`bootstrap_servers=`, `linger_ms=`); an unknown key raises ConfigError naming it."""
        parsed = parse_config(Role.PRODUCER, config, **kwargs)
        if parsed["transactional.id"] is not None:
            raise ConfigError("transactional.id: transactions are not supported by Gregor's producer yet; "
                              "leave it unset for the idempotent producer")
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
        self._accumulator = RecordAccumulator(
            batch_size=parsed["batch.size"], linger_s=parsed["linger.ms"] / 1000,
            delivery_timeout_s=parsed["delivery.timeout.ms"] / 1000, max_block_s=self._max_block_s,
            memory=BufferMemory(self._buffer_memory),
            load_stats=self._default_partitioner.update_load_stats if adaptive else None,
            availability_timeout_s=parsed["partitioner.availability.timeout.ms"] / 1000)
        self._thread = NetworkThread(name=f"gregor-{self.client_id}")
        self._network = NetworkClient(NetworkSettings.from_config({**parsed, "client.id": self.client_id}))
        self._cluster = self._network.cluster
        self._sender = Sender(self._network, self._accumulator, SenderSettings(
            acks=parsed["acks"], retries=parsed["retries"], request_timeout_ms=parsed["request.timeout.ms"],
            max_in_flight=parsed["max.in.flight.requests.per.connection"],
            max_request_size=self._max_request_size, compression=_COMPRESSION[compression_name],
            compression_level=None if level is None or level < 0 else level,
            idempotent=parsed["enable.idempotence"], transaction_timeout_ms=parsed["transaction.timeout.ms"]))
        self._routes: dict[str, _Route] = {}
        self._closed = False
        self._thread.run(self._start(), _GRACE_SECONDS)
        self._sender_task = self._thread.spawn(self._sender.run(), name=f"{self.client_id}-sender")

    async def _start(self) -> None:
        self._network.start()

    # -- sending --

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp: int | None = None, headers: HeadersArg = None,
             callback: Callback | None = None) -> RecordFuture:
        """Queue a record for `topic` and return its future; `callback(metadata, exception)`
        runs on the producer's I/O thread when the record is acknowledged or fails.

        Raises at once (and sends nothing) for a closed producer, a serializer error, a
        partition the topic does not have, a record over `max.request.size`, or when the
        topic's metadata or buffer space does not come within `max.block.ms`.
        """
        if self._closed:
            raise KafkaException(ClientErrorCode._STATE, "cannot send after the producer has been closed")
        header_items = _header_items(headers) if headers else ()
        if self._intercepting:
            record = self._interceptors.on_send(ProducerRecord(topic, value, key, partition, timestamp, header_items))
            topic, value, key, partition, timestamp, header_items = record
            header_items = _header_items(header_items)
            callback = self._with_acknowledgement(callback)
        deadline = None  # max.block.ms from now, taken only when send has to wait
        route = self._routes.get(topic)
        if route is None or route.metadata is not self._cluster.topics.get(topic) or \
                (partition is not None and not 0 <= partition < route.num_partitions):
            deadline = time.monotonic() + self._max_block_s
            route = self._route(topic, partition, deadline)
        if self._raw_keys and (key is None or type(key) is bytes):
            key_bytes = key
        else:
            key_bytes = self._key_serializer.serialize(topic, key, header_items)
        if self._raw_values and (value is None or type(value) is bytes):
            value_bytes = value
        else:
            value_bytes = self._value_serializer.serialize(topic, value, header_items)
        sticky = None
        if partition is not None:
            chosen = partition
        elif key_bytes is not None and self._keys_place_records:
            chosen = partition_for_key(key_bytes, route.num_partitions)
        elif route.sticky is not None:
            sticky = route.sticky
            chosen = sticky.partition(route.num_partitions, route.available)
        else:
            try:
                chosen = choose_partition(self._partitioner, topic, None, key_bytes, value_bytes,
                                          route.num_partitions, route.available)
            except ValueError as error:
                raise KafkaException(ClientErrorCode._UNKNOWN_PARTITION, str(error)) from None
        encoded_headers = encode_headers(header_items) if header_items else _NO_HEADERS
        record_size = 21 + len(encoded_headers) + (len(key_bytes) if key_bytes is not None else 0) \
            + (len(value_bytes) if value_bytes is not None else 0)  # estimated_record_size, inlined
        if record_size + BATCH_HEADER_SIZE > self._record_limit:
            limit, key_name = min((self._max_request_size, "max.request.size"),
                                  (self._buffer_memory, "buffer.memory"))
            raise KafkaException(ErrorCode.MESSAGE_TOO_LARGE,
                                 f"the record is {record_size + BATCH_HEADER_SIZE} bytes when serialized, "
                                 f"more than {key_name} ({limit})")
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        future, batch_full, new_batch = self._accumulator.append(
            route.partitions[chosen], timestamp, key_bytes, value_bytes, encoded_headers, callback, deadline)
        if sticky is not None:
            sticky.record_appended(record_size, route.num_partitions, route.available,
                                   enable_switch=batch_full or new_batch)
        if batch_full or (new_batch and self._sender.sleeping_until > time.monotonic() + self._accumulator.linger_s):
            self._sender.wakeup_threadsafe()
        return future

    def _with_acknowledgement(self, callback: Callback | None) -> Callback:
        interceptors = self._interceptors

        def acknowledge(metadata: RecordMetadata | None, error: KafkaException | None) -> None:
            interceptors.on_acknowledgement(metadata, error)
            if callback is not None:
                callback(metadata, error)
        return acknowledge

    def _route(self, topic: str, partition: int | None, deadline: float) -> _Route:
        """The topic's partitions as `send` needs them, waiting for its metadata if need be."""
        route = self._routes.get(topic)
        metadata = self._network.cluster.topics.get(topic)
        if route is not None and route.metadata is metadata and (partition is None or partition < route.num_partitions):
            return route
        if metadata is None or not metadata.partitions or (partition is not None
                                                          and partition not in metadata.partitions):
            metadata = self._wait_for_metadata(topic, partition, deadline)
        sticky = self._default_partitioner.sticky_for(topic) if self._default_partitioner is not None else None
        route = self._routes[topic] = _Route(metadata, sticky)
        return route

    def _wait_for_metadata(self, topic: str, partition: int | None, deadline: float) -> TopicMetadata:
        if not topic:
            raise KafkaException(ErrorCode.INVALID_TOPIC_EXCEPTION, "the topic name is empty")
        last_error = "no answer yet"
        cause: KafkaException | None = None  # the last answer, chained to the timeout for callers to inspect
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, f"topic {topic!r} not present in metadata after "
                                        f"{self._max_block_s * 1000:.0f} ms (max.block.ms): {last_error}") from cause
            try:
                metadata, code = self._thread.run(self._fetch_metadata(topic, remaining * 1000),
                                                  remaining + _GRACE_SECONDS)
            except KafkaException as error:
                if not error.retriable:
                    raise
                last_error, cause = str(error), error
                metadata, code = None, None
            if metadata is not None and metadata.partitions:
                if partition is None or partition in metadata.partitions:
                    return metadata
                raise KafkaException(ClientErrorCode._UNKNOWN_PARTITION,
                                     f"partition {partition} of topic {topic!r} does not exist (it has "
                                     f"partitions 0 to {len(metadata.partitions) - 1})")
            if code is not None:
                error = error_for(code, f"topic {topic!r}")
                if not error.retriable:
                    raise error
                last_error, cause = error.name, error
            time.sleep(min(self._network.settings.retry_backoff_ms / 1000, max(deadline - time.monotonic(), 0)))

    async def _fetch_metadata(self, topic: str, timeout_ms: float) -> tuple[TopicMetadata | None, int | None]:
        cluster = self._network.cluster
        cluster.wanted_topics.add(topic)
        await self._network.refresh_metadata(sorted(cluster.wanted_topics), allow_auto_topic_creation=True,
                                             timeout_ms=timeout_ms)
        return cluster.topics.get(topic), cluster.topic_errors.get(topic)

    # -- the rest of the API --

    def partitions_for(self, topic: str) -> list[PartitionMetadata]:
        """The topic's partitions (waiting up to max.block.ms for its metadata)."""
        metadata = self._route(topic, None, time.monotonic() + self._max_block_s).metadata
        return [metadata.partitions[index] for index in sorted(metadata.partitions)]

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now, ignoring linger.ms, and wait until each record sent before
        this call is acknowledged or failed; KafkaTimeoutError if `timeout` seconds pass first."""
        batches = self._accumulator.begin_flush()
        try:
            self._thread.call_soon(self._sender.wakeup)
            deadline = None if timeout is None else time.monotonic() + timeout
            for batch in batches:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
                if not batch.result.wait(remaining):
                    raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT,
                                            f"flush did not complete within {timeout} s")
        finally:
            self._accumulator.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (for up to `timeout` seconds, default forever), fail the rest
        with _DESTROY, and release connections and the network thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._thread.call_soon(self._sender.stop, timeout == 0)
            try:
                self._sender_task.result(timeout)
            except TimeoutError:
                self._thread.call_soon(self._sender.stop, True)
                self._sender_task.result(_GRACE_SECONDS)
            self._thread.run(self._network.close(), _GRACE_SECONDS)
        finally:
            self._thread.close(_GRACE_SECONDS)
            self._interceptors.close()
            self._partitioner.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Producer {self.client_id}{' closed' if self._closed else ''}>"


def _header_items(headers: HeadersArg | Sequence[tuple[str, Any]]) -> tuple[tuple[str, bytes | None], ...]:
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
