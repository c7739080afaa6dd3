"""The asyncio producer: `await producer.send(...)` on the caller's event loop, no thread.

It is the sync producer's machinery (`ProducerBase`: serializers, partitioner, accumulator;
the `Sender` task; the `NetworkClient`) driven from the caller's loop instead of a network
thread: `send` encodes the record into its partition's open batch at once, the sender task
ships batches, and the record's future resolves when the broker answers. So retries,
idempotence, ordering with `max.in.flight.requests.per.connection` <= 5, metadata refresh on a
leader change and `delivery.timeout.ms` are exactly the sync producer's.

Cancellation: cancelling a `send` (or the task awaiting it) cancels only the wait. A record
that was queued stays queued and is delivered like any other (as with aiokafka, there is no
taking it back out of a batch); a cancelled wait for metadata or buffer space queues nothing.
Requests are written whole by the sender and connection, never by the cancelled task, so no
request is left half-written.

Transactions (`transactional.id`) as the sync producer: `await init_transactions()`,
`begin_transaction()`, sends, `await send_offsets_to_transaction(...)`, `await
commit_transaction()` / `await abort_transaction()`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from asyncio import get_running_loop
from typing import Any, Mapping

from gregor.client.aio.binding import LoopBinding, check_optional_int, check_timeout
from gregor.client.aio.memory import AsyncBufferMemory, NoRoom
from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError
from gregor.client.group_metadata import ConsumerGroupMetadata
from gregor.client.network import PartitionMetadata, TopicPartition
from gregor.client.producer.base import (
    HeadersArg, PreparedRecord, ProducerBase, ProducerRecord, Route, RouteWait, header_items,
)
from gregor.client.producer.future import (
    BatchMetadata, BatchResult, Callback, RecordFuture, RecordMetadata, batch_metadata,
)

log = logging.getLogger(__name__)

_new_metadata = tuple.__new__  # RecordMetadata(...) without its Python-level __new__


class Producer(ProducerBase):
    """Publishes records to topics from asyncio code (see the module doc).

    Configuration as the sync `gregor.client.Producer` (Kafka's keys, or keywords with
    underscores). Use it as `async with Producer(...) as producer:`, or call `start()` (optional:
    the first call starts it) and `close()`.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(config, kwargs, memory=AsyncBufferMemory)
        self._binding = LoopBinding("producer")
        self._sender_task: asyncio.Task[None] | None = None
        self._route_waits: dict[tuple[str, int | None], asyncio.Task[Route]] = {}
        self._sender_woken = False
        # per batch waited on: its records' asyncio futures and, in the same order, their records
        self._waiting: dict[BatchResult, tuple[list[asyncio.Future[RecordMetadata]], list[RecordFuture]]] = {}

    async def start(self) -> None:
        """Start the sender and metadata tasks on the running loop (the first call does it too)."""
        self._check_open()
        self._start()

    def _start(self) -> None:
        if self._binding.bind():
            self._network.start()
            self._sender_task = asyncio.get_running_loop().create_task(
                self._sender.run(), name=f"{self.client_id}-sender")

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- sending --

    async def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                   timestamp: int | None = None, headers: HeadersArg = None) -> RecordMetadata:
        """Send a record and return its metadata (topic, partition, offset, timestamp) once the
        broker acknowledged it; raises its KafkaException if it failed. For many records in
        flight at once, `enqueue` them (or gather sends) rather than awaiting one by one."""
        future = await self.enqueue(topic, value, key, partition, timestamp, headers)
        return await future

    async def enqueue(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                      timestamp: int | None = None, headers: HeadersArg = None) -> asyncio.Future[RecordMetadata]:
        """Queue a record and return a future of its metadata (aiokafka's `send`). Waits only for
        the topic's metadata or buffer space, up to `max.block.ms`; raises at once (queueing
        nothing) for a closed producer, a wrong argument type, a serializer error, a partition the
        topic does not have or a record over `max.request.size`."""
        if key is None and type(value) is bytes and partition is None and timestamp is None and not headers \
                and type(topic) is str and get_running_loop() is self._binding.loop:
            # the common send in one step (it neither opens nor fills a batch: no sender to let run)
            appended = self._append_plain(topic, value, None)
            if appended is not None:
                return self._as_asyncio(appended)
        self._check_open()
        self._start()
        _check_send_args(topic, partition, timestamp)
        items = header_items(headers) if headers else ()
        callback: Callback | None = None
        if self._intercepting:
            record, callback = self._intercept(ProducerRecord(topic, value, key, partition, timestamp, items), None)
            topic, value, key, partition, timestamp, items = record
        route = self._known_route(topic, partition)
        if route is None:
            route = await self._shared_wait_for_route(topic, partition)
            self._check_open()
        try:
            queued = self._queue(route, topic, value, key, partition, timestamp, items, callback, None)
        except NoRoom as no_room:
            queued = await self._append_waiting(no_room.record, callback, no_room.size)
        future = self._as_asyncio(queued)
        if self._sender_woken:
            # a batch filled: let the sender ship it now rather than after the caller's loop of sends
            self._sender_woken = False
            await asyncio.sleep(0)
        return future

    async def send_columns(self, topic: str, values: Any, keys: Any = None, *, partition: int | None = None,
                           partitions: Any = None, timestamps: Any = None, headers: Any = None,
                           ) -> list[BatchMetadata]:
        """The sync producer's `send_columns` (many records from lists or pyarrow columns, encoded
        in one vectorized pass): returns each batch's metadata once all are acknowledged."""
        self._check_open()
        self._start()
        _check_send_args(topic, partition, None)
        columns = self._record_columns(values, keys, timestamps, headers, partitions)
        route = self._known_route(topic, partition) or await self._shared_wait_for_route(topic, partition)
        self._check_open()
        results: list[tuple[BatchResult, int]] = []
        deadline: float | None = None
        for topic_partition, encoded in self._columnar_plan(topic, route, columns, partition):
            while True:
                try:
                    batch = self._accumulator.append_encoded(topic_partition, encoded, deadline)
                    break
                except NoRoom as no_room:
                    deadline = deadline or time.monotonic() + self._max_block_s
                    assert isinstance(self._memory, AsyncBufferMemory)
                    await self._memory.wait_for(no_room.size, deadline)
                    self._check_open()
            results.append((batch.result, encoded.count))
            self._wake_sender()
        await asyncio.gather(*(_completion(result) for result, _ in results))
        return [batch_metadata(result, count) for result, count in results]

    async def _append_waiting(self, prepared: PreparedRecord, callback: Callback | None, size: int) -> RecordFuture:
        """Append once `size` bytes of buffer.memory are free, waiting up to max.block.ms."""
        deadline = time.monotonic() + self._max_block_s
        while True:
            assert isinstance(self._memory, AsyncBufferMemory)
            await self._memory.wait_for(size, deadline)
            self._check_open()
            try:
                return self._append(prepared, callback, deadline)
            except NoRoom as no_room:
                size = no_room.size

    def _as_asyncio(self, record: RecordFuture) -> asyncio.Future[RecordMetadata]:
        """An asyncio future of the record, resolved with the rest of its batch by one callback
        (on this loop: the sender runs here)."""
        assert self._binding.loop is not None
        future: asyncio.Future[RecordMetadata] = self._binding.loop.create_future()
        result = record._batch
        waiting = self._waiting.get(result)
        if waiting is None:
            waiting = self._waiting[result] = ([], [])
            if not result.add_done_callback(lambda: self._resolve(result)):
                self._waiting.pop(result)
                _settle(future, record)
                return future
        waiting[0].append(future)
        waiting[1].append(record)
        return future

    def _resolve(self, result: BatchResult) -> None:
        """Resolve the futures of a completed batch's records in one pass (what `_settle` does
        for each, with the batch's outcome read once)."""
        futures, records = self._waiting.pop(result, ((), ()))
        error = result.error
        if error is not None:
            for future in futures:
                if not future.done():
                    future.set_exception(error)
            return
        topic, partition, base_offset, append_time = result.topic, result.partition, result.base_offset, \
            result.log_append_time
        for future, record in zip(futures, records):
            if not future.done():
                future.set_result(_new_metadata(RecordMetadata, (
                    topic, partition, base_offset + record._relative_offset if base_offset >= 0 else -1,
                    append_time if append_time >= 0 else record._timestamp, record._key_size, record._value_size)))

    def _wake_sender(self) -> None:
        self._sender.wakeup()
        self._sender_woken = True

    async def _shared_wait_for_route(self, topic: str, partition: int | None) -> Route:
        """Sends that wait for the same topic share one wait, and resume in the order they came:
        records sent by tasks started one after another keep that order, as those of one task do."""
        key = (topic, partition)
        wait = self._route_waits.get(key)
        if wait is None:
            wait = self._route_waits[key] = asyncio.get_running_loop().create_task(
                self._wait_for_route(topic, partition), name=f"{self.client_id}-metadata-{topic}")

            def forget(done: asyncio.Task[Route]) -> None:
                self._route_waits.pop(key, None)
                if not done.cancelled():
                    done.exception()  # seen: the waiters raise it, and there may be none left
            wait.add_done_callback(forget)
        return await asyncio.shield(wait)

    async def _wait_for_route(self, topic: str, partition: int | None) -> Route:
        deadline = time.monotonic() + self._max_block_s
        wait = RouteWait(topic, self._max_block_s)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise wait.timed_out() from wait.cause
            try:
                metadata, code = await self._fetch_metadata(topic, remaining * 1000)
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
            await asyncio.sleep(min(self._network.settings.retry_backoff_ms / 1000,
                                    max(deadline - time.monotonic(), 0)))

    # -- the rest of the API --

    async def partitions_for(self, topic: str) -> list[PartitionMetadata]:
        """The topic's partitions (waiting up to max.block.ms for its metadata)."""
        self._check_open()
        self._start()
        if not isinstance(topic, str):
            raise TypeError(f"topic must be str, not {type(topic).__name__}")
        route = self._known_route(topic, None) or await self._shared_wait_for_route(topic, None)
        metadata = route.metadata
        return [metadata.partitions[index] for index in sorted(metadata.partitions)]

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now, ignoring linger.ms, and wait until each record queued before
        this call is acknowledged or failed; KafkaTimeoutError if `timeout` seconds pass first.
        Cancelling it cancels only the wait."""
        timeout = check_timeout(timeout)
        self._check_open()
        self._start()
        batches = self._accumulator.begin_flush()
        try:
            self._sender.wakeup()
            waits = [_completion(batch.result) for batch in batches]
            if waits:
                try:
                    async with asyncio.timeout(timeout):
                        await asyncio.gather(*waits)
                except TimeoutError:
                    raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT,
                                            f"flush did not complete within {timeout} s") from None
        finally:
            self._accumulator.end_flush()

    # -- transactions (the sync producer's semantics) --

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Register `transactional.id` (fencing older producers with it); once, before the first
        transaction. `timeout` in seconds defaults to max.block.ms."""
        self._check_open()
        self._start()
        await self._init_transactions(self._txn_deadline(check_timeout(timeout)))

    def begin_transaction(self) -> None:
        """Start a transaction: the records sent until commit or abort belong to it."""
        self._begin_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any],
                                          group_metadata: ConsumerGroupMetadata | str,
                                          timeout: float | None = None) -> None:
        """Commit a group's offsets with the transaction (pass `consumer.group_metadata()`)."""
        self._check_open()
        self._start()
        await self._send_offsets_to_transaction(offsets, group_metadata, self._txn_deadline(check_timeout(timeout)))

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush the transaction's records and commit it (errors as the sync producer's)."""
        self._check_open()
        self._start()
        await self._commit_transaction(self._txn_deadline(check_timeout(timeout)))

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: unsent records fail, sent ones stay invisible to read_committed."""
        self._check_open()
        self._start()
        await self._abort_transaction(self._txn_deadline(check_timeout(timeout)))

    async def close(self, timeout: float | None = None) -> None:
        """Send what is queued (for up to `timeout` seconds, default forever), fail the rest with
        _DESTROY, and close the connections. Idempotent; sends after it raise _STATE."""
        timeout = check_timeout(timeout)
        if self._closed:
            return
        self._closed = True
        self._close_plain_path()
        try:
            if self._sender_task is not None:
                self._sender.stop(timeout == 0)
                try:
                    async with asyncio.timeout(timeout):
                        await asyncio.shield(self._sender_task)
                except TimeoutError:
                    self._sender.stop(True)
                    await self._sender_task
                for wait in list(self._route_waits.values()):
                    wait.cancel()
                await self._network.close()
        finally:
            assert isinstance(self._memory, AsyncBufferMemory)
            self._memory.release(0)  # wakes appends waiting for room; they see the producer closed
            self._close_plugins()


def _check_send_args(topic: object, partition: object, timestamp: object) -> None:
    if type(topic) is not str and not isinstance(topic, str):
        raise TypeError(f"topic must be str, not {type(topic).__name__}")
    if partition is not None:
        check_optional_int(partition, "partition")
    if timestamp is not None:
        check_optional_int(timestamp, "timestamp")


def _settle(future: asyncio.Future[RecordMetadata], record: RecordFuture) -> None:
    if future.done():
        return
    try:
        future.set_result(record.outcome())
    except KafkaException as error:
        future.set_exception(error)


def _completion(result: BatchResult) -> asyncio.Future[None]:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def done() -> None:
        if not future.done():
            future.set_result(None)
    if not result.add_done_callback(done):
        done()
    return future
