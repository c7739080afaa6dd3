"""The record accumulator: per-partition queues of batches shared by senders and the I/O thread.

Application threads append (under one lock); the sender on the network thread asks which
leaders have sendable batches (`ready`), takes them (`drain`), puts failed ones back in
sequence order (`reenqueue`) and expires those past `delivery.timeout.ms`. A batch is sendable
when it is full, when more batches wait behind it, when it has lingered `linger.ms`, or when a
flush or close is in progress; never before its retry backoff ends.

`report_load` feeds adaptive partitioning (KIP-794): each topic's queue lengths go to the
partitioner, leaving out partitions whose leader has had sendable data but could not take it
for longer than `partitioner.availability.timeout.ms`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from typing import Callable, Iterable, Mapping

from gregor.client.network import ClusterMetadata, TopicPartition
from gregor.client.producer.batch import (
    BATCH_HEADER_SIZE, NO_HEADERS, RECORD_BOUND, EncodedBatch, ProducerBatch, estimated_record_size,
)
from gregor.client.producer.future import Callback, RecordFuture
from gregor.client.producer.memory import BufferMemory

_new = object.__new__

LoadStatsSink = Callable[[str, Mapping[int, int], int], None]
"""(topic, batches queued per usable partition in partition order, partitions left out)."""


AppendResult = tuple[RecordFuture, bool, bool]
"""(the record's future, whether its batch is now full, whether the record opened a new batch)"""


class RecordAccumulator:
    def __init__(self, *, batch_size: int, linger_s: float, delivery_timeout_s: float,
                 memory: BufferMemory, max_block_s: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 load_stats: LoadStatsSink | None = None, availability_timeout_s: float = 0.0) -> None:
        self.batch_size = max(batch_size, 1)
        self.linger_s = linger_s
        self.delivery_timeout_s = delivery_timeout_s
        self.max_block_s = max_block_s
        self.memory = memory
        self._clock = clock
        self._lock = threading.Lock()
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._flushes = 0
        self.closing = False
        self._drain_start = 0
        self._ordinals = itertools.count()
        self._load_stats = load_stats
        self._availability_timeout_s = availability_timeout_s
        self._node_ready_at: dict[int, float] = {}
        self._node_drained_at: dict[int, float] = {}

    # -- application threads --

    def append_to_open(self, topic_partition: TopicPartition, timestamp: int, key: bytes | None,
                       value: bytes | None, encoded_headers: bytes, callback: Callback | None) -> RecordFuture | None:
        """The common case of `append`, cheaper: the partition's open batch takes the record, which
        fits under the batch's size bound (the batch is neither full nor new then). None when
        there is no open batch or the record may not fit: call `append`."""
        lock = self._lock
        lock.acquire()  # not `with`, which costs twice as much: this is every record's path
        try:
            queue = self._queues.get(topic_partition)
            if not queue:
                return None
            last = queue[-1]
            if last.full:
                return None
            # ProducerBatch.try_append's common case inlined (a call less per record). A queued
            # batch that is not full holds a record already, so its base timestamp is set.
            key_size = -1 if key is None else len(key)
            value_size = -1 if value is None else len(value)
            bound = last.bound + RECORD_BOUND + key_size + value_size + len(encoded_headers)
            if bound > last.capacity:
                return None
            count = last.count
            last.bound = bound
            if key is None and encoded_headers is NO_HEADERS and last.keys is None and last.headers is None:
                last.timestamps.append(timestamp)
                last.values.append(value)
            else:
                last.queue(timestamp, key, value, encoded_headers)
            last.count = count + 1
            future = _new(RecordFuture)  # RecordFuture(...) without the call to __init__: every slot stored
            future._batch = last.result
            future._relative_offset = count
            future._timestamp = timestamp
            future._key_size = key_size
            future._value_size = value_size
            if callback is not None:
                last.waiters.append((future, callback))
            return future
        finally:
            lock.release()

    def queue_of(self, topic_partition: TopicPartition) -> deque[ProducerBatch]:
        """The partition's queue of batches, for `append_plain` (made when missing; a partition
        keeps its queue for the accumulator's life)."""
        with self._lock:
            queue = self._queues.get(topic_partition)
            if queue is None:
                queue = self._queues[topic_partition] = deque()
            return queue

    def append_plain(self, queue: deque[ProducerBatch], timestamp: int, value: bytes,
                     callback: Callback | None) -> RecordFuture | None:
        """`append_to_open` for a record with a null key and no headers, given its partition's
        queue (`queue_of`): the producer's most common send, with nothing to decide on its key or
        headers. None where `append_to_open` gives None or the open batch holds keys or headers:
        call `append` then."""
        lock = self._lock
        lock.acquire()
        try:
            if not queue:
                return None
            last = queue[-1]
            value_size = len(value)
            bound = last.bound + RECORD_BOUND + value_size  # a null key (-1) and no headers (1 byte)
            if last.full or bound > last.capacity or last.keys is not None or last.headers is not None:
                return None
            count = last.count
            last.bound = bound
            last.timestamps.append(timestamp)
            last.values.append(value)
            last.count = count + 1
            future = _new(RecordFuture)
            future._batch = last.result
            future._relative_offset = count
            future._timestamp = timestamp
            future._key_size = -1
            future._value_size = value_size
            if callback is not None:
                last.waiters.append((future, callback))
            return future
        finally:
            lock.release()

    def append(self, topic_partition: TopicPartition, timestamp: int, key: bytes | None,
               value: bytes | None, encoded_headers: bytes, callback: Callback | None,
               deadline: float | None) -> AppendResult:
        """Add a record to the partition's open batch, opening one (reserving memory, waiting
        up to `deadline`, or `max_block_s` from now when None) when there is none or it is full.
        A batch drained once stays full, so a retried batch never takes new records."""
        future = self.append_to_open(topic_partition, timestamp, key, value, encoded_headers, callback)
        if future is not None:
            return future, False, False
        with self._lock:  # near the open batch's capacity: decide on its exact size
            result = self._append_to_last(topic_partition, timestamp, key, value, encoded_headers, callback)
            if result is not None:
                return result
        size = max(self.batch_size, estimated_record_size(key, value, encoded_headers) + BATCH_HEADER_SIZE)
        self.memory.reserve(size, time.monotonic() + self.max_block_s if deadline is None else deadline)
        with self._lock:
            result = self._append_to_last(topic_partition, timestamp, key, value, encoded_headers, callback)
            if result is not None:
                self.memory.release(size)
                return result
            batch = ProducerBatch(topic_partition.topic, topic_partition.partition, size, self._clock(), size,
                                  next(self._ordinals))
            future = batch.try_append(timestamp, key, value, encoded_headers)
            assert future is not None, "a new batch holds at least one record"
            if callback is not None:
                batch.waiters.append((future, callback))
            queue = self._queues.get(topic_partition)
            if queue is None:
                queue = self._queues[topic_partition] = deque()
            queue.append(batch)
            self._incomplete.add(batch)
            return future, batch.full or len(queue) > 1, True

    def _append_to_last(self, topic_partition: TopicPartition, timestamp: int, key: bytes | None,
                        value: bytes | None, encoded_headers: bytes,
                        callback: Callback | None) -> AppendResult | None:
        queue = self._queues.get(topic_partition)
        if not queue:
            return None
        last = queue[-1]
        if last.full:
            return None
        future = last.try_append(timestamp, key, value, encoded_headers)
        if future is None:
            return None
        if callback is not None:
            last.waiters.append((future, callback))
        return future, last.full, False

    def append_encoded(self, topic_partition: TopicPartition, encoded: EncodedBatch,
                       deadline: float | None) -> ProducerBatch:
        """Queue a batch encoded elsewhere (columnar produce) behind the partition's open batch,
        which it closes, so records keep the order they were sent in."""
        size = BATCH_HEADER_SIZE + len(encoded.records)
        self.memory.reserve(size, time.monotonic() + self.max_block_s if deadline is None else deadline)
        with self._lock:
            batch = ProducerBatch.of_encoded(topic_partition.topic, topic_partition.partition, encoded,
                                             self._clock(), next(self._ordinals))
            queue = self._queues.get(topic_partition)
            if queue is None:
                queue = self._queues[topic_partition] = deque()
            if queue:
                queue[-1].full = True
            queue.append(batch)
            self._incomplete.add(batch)
        return batch

    def begin_flush(self) -> list[ProducerBatch]:
        """Make every batch sendable now; returns those to wait for."""
        with self._lock:
            self._flushes += 1
            return list(self._incomplete)

    def end_flush(self) -> None:
        with self._lock:
            self._flushes -= 1

    def incomplete(self) -> list[ProducerBatch]:
        with self._lock:
            return list(self._incomplete)

    # -- the sender (network thread) --

    def ready(self, cluster: ClusterMetadata, now: float,
              sendable: Callable[[TopicPartition], bool] | None = None) -> tuple[set[int], float, bool]:
        """Leaders with a sendable batch, seconds until the next batch may become sendable, and
        whether some queued partition has no known leader. `sendable` leaves out partitions that
        may not be sent to yet (a transactional producer's, before AddPartitionsToTxn)."""
        ready_nodes: set[int] = set()
        next_check = float("inf")
        unknown_leader = False
        sending_all = self._flushes > 0 or self.closing
        with self._lock:
            for topic_partition, queue in self._queues.items():
                if not queue or (sendable is not None and not sendable(topic_partition)):
                    continue
                first = queue[0]
                metadata = cluster.partition(topic_partition)
                leader = metadata.leader if metadata is not None else -1
                if leader < 0 or leader not in cluster.brokers:
                    unknown_leader = True
                    continue
                if leader in ready_nodes:
                    continue
                if first.attempts and first.retry_at > now:
                    next_check = min(next_check, first.retry_at - now)
                    continue
                due = first.created + self.linger_s
                if sending_all or first.full or len(queue) > 1 or due <= now:
                    ready_nodes.add(leader)
                else:
                    next_check = min(next_check, due - now)
        return ready_nodes, next_check, unknown_leader

    def report_load(self, cluster: ClusterMetadata) -> None:
        """Give the partitioner each queued topic's batches per partition with a usable leader."""
        if self._load_stats is None:
            return
        queued: dict[str, dict[int, int]] = {}
        with self._lock:
            for topic_partition, queue in self._queues.items():
                queued.setdefault(topic_partition.topic, {})[topic_partition.partition] = len(queue)
        for topic, lengths in queued.items():
            metadata = cluster.topics.get(topic)
            if metadata is None:
                continue
            sizes: dict[int, int] = {}
            excluded = 0
            for index in sorted(metadata.partitions):
                leader = metadata.partitions[index].leader
                if leader < 0:
                    continue
                if self._unavailable(leader):
                    excluded += 1
                else:
                    sizes[index] = lengths.get(index, 0)
            self._load_stats(topic, sizes, excluded)

    def _unavailable(self, node: int) -> bool:
        if self._availability_timeout_s <= 0:
            return False
        ready_at = self._node_ready_at.get(node)
        return ready_at is not None and ready_at - self._node_drained_at[node] > self._availability_timeout_s

    def node_polled(self, node: int, now: float, can_drain: bool) -> None:
        """The sender found sendable data for `node` and could (or, at its in-flight limit,
        could not) take it: Java's node latency stats behind partitioner.availability.timeout.ms."""
        if self._availability_timeout_s <= 0:
            return
        if can_drain or node not in self._node_drained_at:
            self._node_drained_at[node] = now
        self._node_ready_at[node] = now

    def drain(self, cluster: ClusterMetadata, nodes: Iterable[int], max_request_size: int,
              now: float, sendable: Callable[[TopicPartition], bool] | None = None) -> dict[int, list[ProducerBatch]]:
        """Take the first sendable batch of each partition led by `nodes` (and allowed by
        `sendable`), up to `max_request_size` bytes per node (at least one batch)."""
        wanted = set(nodes)
        drained: dict[int, list[ProducerBatch]] = {}
        sizes: dict[int, int] = {}
        with self._lock:
            items = list(self._queues.items())
            if not items:
                return drained
            start = self._drain_start % len(items)
            self._drain_start += 1
            for topic_partition, queue in items[start:] + items[:start]:
                if not queue or (sendable is not None and not sendable(topic_partition)):
                    continue
                first = queue[0]
                if first.attempts and first.retry_at > now:
                    continue
                metadata = cluster.partition(topic_partition)
                if metadata is None or metadata.leader not in wanted:
                    continue
                node = metadata.leader
                taken = drained.get(node)
                if taken:
                    # measured (encoding what they queued) only when a node takes several; a
                    # lone batch is encoded when built, outside the lock appends need
                    used = sizes.get(node)
                    if used is None:
                        used = taken[0].size
                    size = first.size
                    if used + size > max_request_size:
                        continue
                    sizes[node] = used + size
                    taken.append(first)
                else:
                    drained[node] = [first]
                queue.popleft()
                first.full = True
                first.in_flight = True
        return drained

    def reenqueue(self, batch: ProducerBatch) -> None:
        """Put a batch to retry back in its queue ahead of every batch created after it, so a
        partition's records keep their order (and sequences, when they are given again)."""
        batch.in_flight = False
        with self._lock:
            topic_partition = TopicPartition(batch.topic, batch.partition)
            queue = self._queues.get(topic_partition)
            if queue is None:
                queue = self._queues[topic_partition] = deque()
            position = 0
            while position < len(queue) and queue[position].ordinal < batch.ordinal:
                position += 1
            queue.insert(position, batch)

    def expired(self, now: float) -> list[ProducerBatch]:
        """Remove and return the queued batches older than `delivery.timeout.ms`."""
        expired: list[ProducerBatch] = []
        with self._lock:
            for queue in self._queues.values():
                while queue and queue[0].created + self.delivery_timeout_s <= now:
                    expired.append(queue.popleft())
                if queue and queue[-1].created + self.delivery_timeout_s <= now:
                    keep = [batch for batch in queue if batch.created + self.delivery_timeout_s > now]
                    expired.extend(batch for batch in queue if batch.created + self.delivery_timeout_s <= now)
                    queue.clear()
                    queue.extend(keep)
        return expired

    def abort_queued(self) -> list[ProducerBatch]:
        """Remove and return every queued batch (a forced close)."""
        with self._lock:
            batches = [batch for queue in self._queues.values() for batch in queue]
            for queue in self._queues.values():
                queue.clear()
        return batches

    def finished(self, batch: ProducerBatch) -> None:
        """A batch completed (acknowledged or failed): give back its memory."""
        with self._lock:
            self._incomplete.discard(batch)
        self.memory.release(batch.reserved_bytes)

    def has_incomplete(self) -> bool:
        with self._lock:
            return bool(self._incomplete)
