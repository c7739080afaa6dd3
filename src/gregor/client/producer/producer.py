"""Gregor's Producer: Kafka's producer semantics for any Kafka-compatible cluster.

`send` runs on the caller's thread: interceptors, metadata (waiting up to `max.block.ms` for a
topic it has not seen), serializers, the partitioner, then an append to the record accumulator,
which encodes the record into its partition's open batch (those steps live in `base`, shared
with the asyncio producer). A `Sender` on the producer's network thread ships the batches.
Many threads may share one producer.

With `transactional.id` it is the Java client's transactional producer: `init_transactions()`
once, then `begin_transaction()`, sends (and `send_offsets_to_transaction(offsets,
consumer.group_metadata())` for a consume-transform-produce loop), and `commit_transaction()` or
`abort_transaction()`. Each waits on the network thread; see `transaction_manager` for the states.
"""

from __future__ import annotations

import logging
import time
from time import time_ns
from typing import Any, Mapping

from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError
from gregor.client.group_metadata import ConsumerGroupMetadata
from gregor.client.network import NetworkThread, PartitionMetadata, TopicPartition
from gregor.client.producer.base import HeadersArg, ProducerBase, ProducerRecord, Route, RouteWait, header_items
from gregor.client.producer.future import Callback, ColumnsFuture, RecordFuture

log = logging.getLogger(__name__)

_GRACE_SECONDS = 5.0

__all__ = ["Producer", "ProducerRecord"]


class Producer(ProducerBase):
    """Publishes records to topics (see the module doc); thread-safe."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Kafka's producer keys in `config` and/or as keyword arguments with underscores
        (`bootstrap_servers=`, `linger_ms=`); an unknown key raises ConfigError naming it."""
        super().__init__(config, kwargs)
        self._thread = NetworkThread(name=f"gregor-{self.client_id}")
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
        if key is None and type(value) is bytes and partition is None and timestamp is None and not headers:
            # ProducerBase._append_plain written out (the asyncio producer calls it): a frame less
            # on the path of most sends, measured 5-7% of the caller's time
            route = self._routes.get(topic)
            if route is not None and len(value) <= self._plain_value_limit:
                topics = self._cluster.topics
                if route.topics is topics or route.follow(topics):
                    sticky = route.sticky
                    chosen = sticky.current if sticky is not None else None
                    if chosen is not None and chosen < route.num_partitions:
                        queue = route.queues[chosen]
                        if queue is None:
                            queue = route.queues[chosen] = self._accumulator.queue_of(route.partitions[chosen])
                        future = self._accumulator.append_plain(queue, time_ns() // 1_000_000, value, callback)
                        if future is not None:
                            record_size = 22 + len(value)  # estimated_record_size, inlined
                            produced = sticky.produced_bytes + record_size
                            if produced < sticky.forced_switch_bytes:
                                sticky.produced_bytes = produced  # record_appended(enable_switch=False)
                            else:
                                self._appended(route, sticky, record_size, False, False)
                            return future
        if self._closed:
            self._check_open()
        items = header_items(headers) if headers else ()
        if self._intercepting:
            record, callback = self._intercept(ProducerRecord(topic, value, key, partition, timestamp, items),
                                               callback)
            topic, value, key, partition, timestamp, items = record
        deadline = None  # max.block.ms from now, taken only when send has to wait
        route = self._routes.get(topic)
        if route is None or route.metadata is not self._cluster.topics.get(topic) or \
                (partition is not None and not 0 <= partition < route.num_partitions):
            route = self._known_route(topic, partition)
            if route is None:
                deadline = time.monotonic() + self._max_block_s
                route = self._wait_for_route(topic, partition, deadline)
        return self._queue(route, topic, value, key, partition, timestamp, items, callback, deadline)

    def send_columns(self, topic: str, values: Any, keys: Any = None, *, partition: int | None = None,
                     partitions: Any = None, timestamps: Any = None, headers: Any = None) -> ColumnsFuture:
        """Queue many records at once from columns and return one future for all of them.

        `values` (and `keys`) are lists of bytes/None or pyarrow binary/string arrays, or `values`
        is a pyarrow Table/RecordBatch with a `value` column and optional `key`, `timestamp`,
        `headers` and `partition` columns. The rows are placed as `send` places records (the
        `partition` argument, else the row's partition, else murmur2 of its key, else the sticky
        partitioner per batch) and encoded into record batches of about `batch.size` bytes in one
        vectorized pass (pyarrow), bypassing the serializers and interceptors. Needs pyarrow.
        """
        self._check_open()
        columns = self._record_columns(values, keys, timestamps, headers, partitions)
        deadline = time.monotonic() + self._max_block_s
        route = self._known_route(topic, partition) or self._wait_for_route(topic, partition, deadline)
        results = []
        for topic_partition, encoded in self._columnar_plan(topic, route, columns, partition):
            batch = self._accumulator.append_encoded(topic_partition, encoded, deadline)
            results.append((batch.result, encoded.count))
            self._wake_sender()
        return ColumnsFuture(results)

    def _wake_sender(self) -> None:
        self._sender.wakeup_threadsafe()

    def _wait_for_route(self, topic: str, partition: int | None, deadline: float) -> Route:
        wait = RouteWait(topic, self._max_block_s)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise wait.timed_out() from wait.cause  # the last answer, for callers to inspect
            try:
                metadata, code = self._thread.run(self._fetch_metadata(topic, remaining * 1000),
                                                  remaining + _GRACE_SECONDS)
            except KafkaException as error:
                if not error.retriable:
                    raise
                wait.request_failed(error)
                metadata, code = None, None
            answer = self._metadata_answer(topic, partition, metadata, code)
            if isinstance(answer, Route):
                return answer
            if answer is not None:
                wait.answered(answer)
            time.sleep(min(self._network.settings.retry_backoff_ms / 1000, max(deadline - time.monotonic(), 0)))

    # -- the rest of the API --

    def partitions_for(self, topic: str) -> list[PartitionMetadata]:
        """The topic's partitions (waiting up to max.block.ms for its metadata)."""
        route = self._known_route(topic, None) or self._wait_for_route(topic, None,
                                                                        time.monotonic() + self._max_block_s)
        metadata = route.metadata
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

    # -- transactions --

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register `transactional.id` with its coordinator: get the producer id and epoch, fence
        older producers with the same id and end (abort) a transaction one left open. Call once,
        before the first transaction; `timeout` seconds (default max.block.ms), after which the
        call may be made again (KafkaTimeoutError)."""
        self._run_transactional(self._init_transactions, timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: the records sent until commit or abort belong to it."""
        self._begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any],
                                    group_metadata: ConsumerGroupMetadata | str,
                                    timeout: float | None = None) -> None:
        """Commit a consumer group's offsets (`{TopicPartition: offset or OffsetAndMetadata}`,
        the next offset to read) as part of the transaction: they become the group's committed
        offsets only if it commits. Pass `consumer.group_metadata()` so that a consumer fenced by
        a rebalance cannot commit (a plain group id skips that check, as Java's deprecated form)."""
        self._run_transactional(lambda deadline: self._send_offsets_to_transaction(
            offsets, group_metadata, deadline), timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush the transaction's records and commit it. Raises TransactionAbortableError when a
        record or request of it failed (then call abort_transaction), ProducerFencedError when a
        newer producer took the transactional id, KafkaTimeoutError (call it again)."""
        self._run_transactional(self._commit_transaction, timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: records not sent yet fail, the sent ones are never shown to
        read_committed consumers, and the group offsets sent with it are dropped."""
        self._run_transactional(self._abort_transaction, timeout)

    def _run_transactional(self, call: Any, timeout: float | None) -> None:
        deadline = self._txn_deadline(timeout)
        self._thread.run(call(deadline), max(deadline - time.monotonic(), 0) + _GRACE_SECONDS)

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (for up to `timeout` seconds, default forever), fail the rest
        with _DESTROY, and release connections and the network thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._close_plain_path()
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
            self._close_plugins()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
