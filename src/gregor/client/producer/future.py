"""What `Producer.send` returns: a light per-record future over one completion per batch.

A `concurrent.futures.Future` per record would build a Condition for every record; here the
batch owns the only synchronisation object (`BatchResult`, a latch set once when the broker
answers or the batch fails) and each record's `RecordFuture` just points at it with its
position, as the Java client's FutureRecordMetadata points at a ProduceRequestResult.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, NamedTuple

from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError

log = logging.getLogger(__name__)

Callback = Callable[["RecordMetadata | None", "KafkaException | None"], Any]


class RecordMetadata(NamedTuple):
    """Where an acknowledged record landed; offset is -1 when acks=0 (nothing comes back)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int


class BatchMetadata(NamedTuple):
    """Where one batch of a columnar send landed: `record_count` records from `base_offset` on
    (-1 with acks=0); `timestamp` is the broker's log append time, or -1 for create time."""

    topic: str
    partition: int
    base_offset: int
    record_count: int
    timestamp: int


class BatchResult:
    """The outcome of one produce batch, shared by its records' futures."""

    __slots__ = ("topic", "partition", "base_offset", "log_append_time", "error", "_done", "_lock",
                 "_waiters")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.log_append_time = -1
        self.error: KafkaException | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[RecordFuture | None, Callable[..., Any]]] | None = []

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None) -> bool:
        return self._done.wait(timeout)

    def complete(self, base_offset: int, log_append_time: int, error: KafkaException | None) -> None:
        """Set the outcome once, run the callbacks registered on its futures, then release the
        waiters: as in the Java client, `get()` and `flush()` return only after the callbacks ran
        (so a callback must not wait on a future of its own batch)."""
        with self._lock:
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            waiters, self._waiters = self._waiters, None
        for future, callback in waiters or ():
            if future is None:
                callback()
            else:
                future._run(callback)
        self._done.set()

    def add_done_callback(self, callback: Callable[[], Any]) -> bool:
        """Call `callback()` when the batch completes (with its records' callbacks); False if it
        already has. For waiters without a thread to block, such as the asyncio producer's flush."""
        with self._lock:
            if self._waiters is None:
                return False
            self._waiters.append((None, callback))
            return True

    def add_waiter(self, future: RecordFuture, callback: Callback) -> bool:
        """Register `callback` for `future`; False if the batch is already complete."""
        with self._lock:
            if self._waiters is None:
                return False
            self._waiters.append((future, callback))
            return True


def batch_metadata(result: BatchResult, count: int) -> BatchMetadata:
    """The metadata of a completed batch; raises its error if it failed."""
    if result.error is not None:
        raise result.error
    return BatchMetadata(result.topic, result.partition, result.base_offset, count, result.log_append_time)


class ColumnsFuture:
    """The pending result of one columnar send: one entry per batch it was cut into."""

    __slots__ = ("_batches",)

    def __init__(self, batches: list[tuple[BatchResult, int]]) -> None:
        self._batches = batches

    @property
    def batches(self) -> list[tuple[BatchResult, int]]:
        return list(self._batches)

    def done(self) -> bool:
        return all(result.done() for result, _ in self._batches)

    def get(self, timeout: float | None = None) -> list[BatchMetadata]:
        """Each batch's metadata once all are acknowledged; raises the first failure, or
        KafkaTimeoutError (_TIMED_OUT) if `timeout` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for result, _ in self._batches:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not result.wait(remaining):
                raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT,
                                        f"no acknowledgement from {result.topic}-{result.partition} within {timeout} s")
        return [batch_metadata(result, count) for result, count in self._batches]

    result = get

    def __repr__(self) -> str:
        return f"<ColumnsFuture {len(self._batches)} batches{' done' if self.done() else ''}>"


class RecordFuture:
    """The pending result of one `send`: `get()`/`result()` block, callbacks run on completion."""

    __slots__ = ("_batch", "_relative_offset", "_timestamp", "_key_size", "_value_size")

    def __init__(self, batch: BatchResult, relative_offset: int, timestamp: int, key_size: int,
                 value_size: int) -> None:
        self._batch = batch
        self._relative_offset = relative_offset
        self._timestamp = timestamp
        self._key_size = key_size
        self._value_size = value_size

    def done(self) -> bool:
        return self._batch.done()

    @property
    def batch_result(self) -> BatchResult:
        """The completion this record shares with the rest of its batch."""
        return self._batch

    def outcome(self) -> RecordMetadata:
        """The metadata of a completed record, or its error raised (no waiting: check `done()`)."""
        if self._batch.error is not None:
            raise self._batch.error
        return self._metadata()

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """The record's metadata once acknowledged; raises its KafkaException if it failed, or
        KafkaTimeoutError (_TIMED_OUT) if `timeout` seconds pass first."""
        if not self._batch.wait(timeout):
            raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT,
                                    f"no acknowledgement from {self._batch.topic}-{self._batch.partition} "
                                    f"within {timeout} s")
        if self._batch.error is not None:
            raise self._batch.error
        return self._metadata()

    result = get

    def exception(self, timeout: float | None = None) -> KafkaException | None:
        """The failure, or None once acknowledged (waits like `get`)."""
        try:
            self.get(timeout)
        except KafkaTimeoutError as error:
            if error.code == ClientErrorCode._TIMED_OUT and not self.done():
                raise
            return error
        except KafkaException as error:
            return error
        return None

    def add_callback(self, callback: Callback) -> None:
        """Call `callback(metadata, exception)` on completion (now, if already complete)."""
        if not self._batch.add_waiter(self, callback):
            self._run(callback)

    def _metadata(self) -> RecordMetadata:
        batch = self._batch
        offset = batch.base_offset + self._relative_offset if batch.base_offset >= 0 else -1
        timestamp = batch.log_append_time if batch.log_append_time >= 0 else self._timestamp
        return RecordMetadata(batch.topic, batch.partition, offset, timestamp, self._key_size, self._value_size)

    def _run(self, callback: Callback) -> None:
        error = self._batch.error
        try:
            callback(None if error is not None else self._metadata(), error)
        except Exception:
            log.exception("producer callback %r raised", callback)

    def __repr__(self) -> str:
        state = "pending" if not self.done() else ("failed" if self._batch.error else "done")
        return f"<RecordFuture {self._batch.topic}-{self._batch.partition} {state}>"
