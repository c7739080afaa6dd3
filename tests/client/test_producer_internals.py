"""The producer's parts without a network: batch encoding (kafka-python decodes it as the
independent oracle), the accumulator's readiness, drain, retry order, expiry and load reports,
buffer memory, the per-record futures, and the idempotent identity's sequences."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from gregor.client.errors import KafkaException
from gregor.client.network import ClusterMetadata, Node, PartitionMetadata, TopicMetadata, TopicPartition
from gregor.client.producer.accumulator import RecordAccumulator
from gregor.client.producer.batch import ProducerBatch, encode_headers, estimated_record_size
from gregor.client.producer.idempotence import ProducerIdentity
from gregor.client.producer.memory import BufferMemory
from gregor.client.producer.sender import Sender, SenderSettings
from gregor.protocol.error_codes import ErrorCode
from gregor.records.compression import Compression

NO_HEADERS = encode_headers([])
FOREVER = float("inf")


def decode(raw: bytes) -> DefaultRecordBatch:
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc()
    return batch


def new_batch(capacity: int = 1 << 20, topic: str = "t", partition: int = 0) -> ProducerBatch:
    return ProducerBatch(topic, partition, capacity, 0.0, capacity)


records_strategy = st.lists(st.tuples(
    st.integers(-10_000, 10_000_000),
    st.none() | st.binary(max_size=300),
    st.none() | st.binary(max_size=20_000),
    st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=50)), max_size=3)),
    min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(records=records_strategy)
def test_encoded_batches_decode_with_kafka_python(records):
    batch = new_batch()
    base = 1_700_000_000_000
    for delta, key, value, headers in records:
        assert batch.try_append(base + delta, key, value, encode_headers(headers)) is not None
    batch.producer_id, batch.producer_epoch, batch.base_sequence = 7, 2, 40
    decoded = decode(batch.build(Compression.NONE))
    assert (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == (7, 2, 40)
    assert decoded.max_timestamp == base + max(delta for delta, *_ in records)
    got = [(record.offset, record.timestamp, record.key, record.value, record.headers) for record in decoded]
    assert got == [(index, base + delta, key, value, [(name, header) for name, header in headers])
                   for index, (delta, key, value, headers) in enumerate(records)]


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_compressed_batches_decode_with_kafka_python(codec):
    batch = new_batch()
    values = [b"value %d " % index * 20 for index in range(100)]
    for index, value in enumerate(values):
        batch.try_append(1000 + index, b"k%d" % index, value, NO_HEADERS)
    decoded = decode(batch.build(codec, None))
    assert decoded.compression_type == codec
    assert [record.value for record in decoded] == values


def test_a_batch_fills_at_its_capacity_but_always_takes_a_first_record():
    batch = new_batch(capacity=200)
    assert batch.try_append(0, None, b"x" * 500, NO_HEADERS) is not None
    assert batch.full
    assert batch.try_append(0, None, b"y", NO_HEADERS) is None
    small = new_batch(capacity=200)
    accepted = 0
    while small.try_append(0, None, b"z" * 10, NO_HEADERS) is not None:
        accepted += 1
    assert small.full and small.size <= 200 and accepted == (200 - 61) // 17  # 17 bytes a record


@settings(max_examples=60, deadline=None)
@given(records=records_strategy, capacity=st.integers(62, 30_000))
def test_a_batch_takes_the_records_that_fit_encoded_one_by_one(records, capacity):
    """Records are queued and encoded in bulk, yet a batch takes exactly the records whose
    encoded sizes, added one by one, fit its capacity (the first one always)."""
    batch = new_batch(capacity)
    base = 1_700_000_000_000
    taken = 0
    for delta, key, value, headers in records:
        if batch.try_append(base + delta, key, value, encode_headers(headers)) is None:
            break
        taken += 1
    oracle = new_batch(1 << 30)
    sizes = []
    for delta, key, value, headers in records[:taken + 1]:
        oracle.try_append(base + delta, key, value, encode_headers(headers))
        sizes.append(oracle.size)
    assert taken >= 1 and batch.count == taken and batch.size == sizes[taken - 1]
    if taken < len(records):
        assert batch.full and sizes[taken] > capacity
    assert batch.full == (taken < len(records) or batch.size >= capacity)
    decoded = decode(batch.build(Compression.NONE))
    assert [(record.offset, record.value) for record in decoded] == \
        [(index, value) for index, (_, _, value, _) in enumerate(records[:taken])]


@pytest.mark.parametrize("one_shape", [False, True])
def test_runs_of_one_timestamp_and_offsets_past_the_varint_table_decode_with_kafka_python(one_shape):
    """The encoder reuses a timestamp delta's varint along a run and slices offset varints from a
    table: a batch of 17,000 records crosses its one-, two- and three-byte widths and its end,
    with null values, keys and headers, or in the one shape assembled in C (null keys, no
    headers, values of one size)."""
    batch = new_batch(1 << 30)
    records = [(1000 + index // 700, None, b"v%04d" % (index % 10_000), []) if one_shape else
               (1000 + index // 700, b"k%d" % index if index % 7 == 0 else None,
                None if index % 11 == 0 else b"v" * (index % 3), [("h", b"1")] if index % 13 == 0 else [])
               for index in range(17_000)]
    for timestamp, key, value, headers in records[:40]:
        batch.try_append(timestamp, key, value, encode_headers(headers))
    batch.seal()  # a second seal starts at offset delta 40
    for timestamp, key, value, headers in records[40:]:
        batch.try_append(timestamp, key, value, encode_headers(headers))
    decoded = decode(batch.build(Compression.NONE))
    assert [(record.offset, record.timestamp, record.key, record.value, record.headers) for record in decoded] == \
        [(index, timestamp, key, value, headers) for index, (timestamp, key, value, headers) in enumerate(records)]


@settings(max_examples=40, deadline=None)
@given(records=records_strategy, capacity=st.integers(62, 30_000), plain=st.booleans())
def test_the_accumulator_fills_batches_as_try_append_does(records, capacity, plain):
    """`RecordAccumulator.append` inlines try_append's common case, and `append_plain` (with
    `plain`: tried first for each keyless, headerless record, as `Producer.send` does) its
    keyless case: the batches and futures they make are those of try_append alone, opening a
    batch whenever one refuses a record."""
    if plain:  # mostly keyless, headerless records, with the others among them
        records = [record if index % 4 == 3 else (record[0], None, record[2], [])
                   for index, record in enumerate(records)]
    acc = accumulator(Clock(), batch_size=capacity, memory=BufferMemory(1 << 40))
    queue = acc.queue_of(TopicPartition("t", 0))
    base = 1_700_000_000_000
    futures = []
    for delta, key, value, headers in records:
        future = acc.append_plain(queue, base + delta, value, None) \
            if plain and key is None and value is not None and not headers else None
        if future is None:
            future = acc.append(TopicPartition("t", 0), base + delta, key, value, encode_headers(headers), None,
                                FOREVER)[0]
        futures.append(future)
    expected: list[ProducerBatch] = []
    for delta, key, value, headers in records:
        size = estimated_record_size(key, value, encode_headers(headers)) + 61  # what a new batch reserves
        if not expected or expected[-1].try_append(base + delta, key, value, encode_headers(headers)) is None:
            expected.append(new_batch(max(capacity, size)))
            expected[-1].try_append(base + delta, key, value, encode_headers(headers))
    queued = acc.abort_queued()
    assert [(batch.count, batch.full, batch.build(Compression.NONE)) for batch in queued] == \
        [(batch.count, batch.full, batch.build(Compression.NONE)) for batch in expected]
    for index, batch in enumerate(queued):
        batch.complete(1000 * index, -1, None)
    starts = [sum(batch.count for batch in expected[:index]) for index in range(len(expected))]
    assert [(future.get(0).offset, future.get(0).timestamp, future.get(0).serialized_key_size,
             future.get(0).serialized_value_size) for future in futures] == \
        [(1000 * batch + (index - starts[batch]), base + delta, -1 if key is None else len(key),
          -1 if value is None else len(value))
         for index, (batch, (delta, key, value, _)) in enumerate(zip(
             [number for number, batch in enumerate(expected) for _ in range(batch.count)], records))]


def test_the_size_estimate_bounds_the_encoded_size():
    for key, value, headers in [(None, None, []), (b"k" * 300, b"v" * 70_000, [("h", b"x" * 200)])]:
        batch = new_batch()
        encoded_headers = encode_headers(headers)
        batch.try_append(123_456, key, value, encoded_headers)
        assert batch.size - 61 <= estimated_record_size(key, value, encoded_headers)


def cluster_with(partitions: dict[tuple[str, int], int], brokers=(0, 1)) -> ClusterMetadata:
    cluster = ClusterMetadata([], 300_000)
    topics: dict[str, dict[int, PartitionMetadata]] = {}
    for (topic, partition), leader in partitions.items():
        topics.setdefault(topic, {})[partition] = PartitionMetadata(topic, partition, leader, 0, (leader,), (leader,))
    cluster.brokers = {node: Node(node, "127.0.0.1", 9092 + node) for node in brokers}
    cluster.topics = {name: TopicMetadata(name, None, False, parts) for name, parts in topics.items()}
    return cluster


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def accumulator(clock: Clock, **overrides) -> RecordAccumulator:
    options = dict(batch_size=200, linger_s=0.05, delivery_timeout_s=10.0, memory=BufferMemory(10_000),
                   clock=clock)
    options.update(overrides)
    return RecordAccumulator(**options)


def append(acc: RecordAccumulator, partition: int, value: bytes, topic: str = "t"):
    return acc.append(TopicPartition(topic, partition), 0, None, value, NO_HEADERS, None, FOREVER)


def test_a_batch_becomes_ready_when_full_or_when_its_linger_ends():
    clock = Clock()
    acc = accumulator(clock)
    cluster = cluster_with({("t", 0): 0, ("t", 1): 1})
    _, first_full, first_new = append(acc, 0, b"a")
    assert first_new and not first_full
    ready, next_check, unknown = acc.ready(cluster, clock.now)
    assert ready == set() and next_check == pytest.approx(0.05) and not unknown
    while not append(acc, 1, b"b" * 20)[1]:
        pass
    assert acc.ready(cluster, clock.now)[0] == {1}
    clock.now += 0.05
    assert acc.ready(cluster, clock.now)[0] == {0, 1}


def test_flush_and_close_make_every_batch_ready():
    clock = Clock()
    acc = accumulator(clock)
    cluster = cluster_with({("t", 0): 0})
    append(acc, 0, b"a")
    batches = acc.begin_flush()
    assert [batch.count for batch in batches] == [1]
    assert acc.ready(cluster, clock.now)[0] == {0}
    acc.end_flush()
    assert acc.ready(cluster, clock.now)[0] == set()
    acc.closing = True
    assert acc.ready(cluster, clock.now)[0] == {0}


def test_a_partition_without_a_leader_is_reported():
    clock = Clock()
    acc = accumulator(clock, linger_s=0)
    append(acc, 0, b"a")
    assert acc.ready(cluster_with({("t", 0): -1}), clock.now) == (set(), FOREVER, True)


def test_drain_takes_one_batch_per_partition_within_max_request_size():
    clock = Clock()
    acc = accumulator(clock, linger_s=0)
    cluster = cluster_with({("t", 0): 0, ("t", 1): 0, ("t", 2): 0})
    for partition in range(3):
        for _ in range(2):
            append(acc, partition, b"v" * 150)
    drained = acc.drain(cluster, [0], max_request_size=450, now=clock.now)
    assert len(drained[0]) == 2
    assert all(batch.in_flight and batch.full for batch in drained[0])
    again = acc.drain(cluster, [0], max_request_size=100, now=clock.now)
    assert len(again[0]) == 1, "a node gets at least one batch even over max.request.size"


def test_a_retried_batch_goes_back_in_front_of_younger_batches():
    clock = Clock()
    acc = accumulator(clock, linger_s=0)
    cluster = cluster_with({("t", 0): 0})
    for _ in range(3):
        append(acc, 0, b"v" * 150)
    first = acc.drain(cluster, [0], 10_000, clock.now)[0][0]
    second = acc.drain(cluster, [0], 10_000, clock.now)[0][0]
    acc.reenqueue(second)
    acc.reenqueue(first)
    order = [acc.drain(cluster, [0], 10_000, clock.now)[0][0] for _ in range(3)]
    assert order[:2] == [first, second]
    assert order[2].ordinal > second.ordinal


def test_a_retry_waits_for_its_backoff():
    clock = Clock()
    acc = accumulator(clock, linger_s=0)
    cluster = cluster_with({("t", 0): 0})
    append(acc, 0, b"v")
    batch = acc.drain(cluster, [0], 10_000, clock.now)[0][0]
    batch.attempts, batch.retry_at = 1, clock.now + 0.2
    acc.reenqueue(batch)
    ready, next_check, _ = acc.ready(cluster, clock.now)
    assert ready == set() and next_check == pytest.approx(0.2)
    assert acc.drain(cluster, [0], 10_000, clock.now) == {}
    clock.now += 0.2
    assert acc.ready(cluster, clock.now)[0] == {0}


def test_appends_never_join_a_batch_that_was_sent():
    clock = Clock()
    acc = accumulator(clock, linger_s=0)
    cluster = cluster_with({("t", 0): 0})
    append(acc, 0, b"a")
    sent = acc.drain(cluster, [0], 10_000, clock.now)[0][0]
    acc.reenqueue(sent)
    assert append(acc, 0, b"b")[2]
    assert sent.count == 1


def test_batches_past_the_delivery_timeout_expire():
    clock = Clock()
    acc = accumulator(clock, delivery_timeout_s=1.0)
    append(acc, 0, b"old")
    clock.now += 0.6
    append(acc, 1, b"young")
    clock.now += 0.5
    expired = acc.expired(clock.now)
    assert [batch.partition for batch in expired] == [0]
    assert acc.expired(clock.now) == []


def test_load_reports_count_queued_batches_and_leave_out_a_stuck_leader():
    clock = Clock()
    reports = []
    acc = accumulator(clock, load_stats=lambda topic, sizes, excluded: reports.append((topic, dict(sizes), excluded)),
                      availability_timeout_s=0.5)
    cluster = cluster_with({("t", 0): 0, ("t", 1): 1, ("t", 2): 1})
    for _ in range(3):
        append(acc, 0, b"v" * 150)
    append(acc, 1, b"v")
    acc.report_load(cluster)
    assert reports[-1] == ("t", {0: 3, 1: 1, 2: 0}, 0)
    acc.node_polled(0, 100.0, can_drain=True)
    acc.node_polled(0, 100.4, can_drain=False)
    acc.report_load(cluster)
    assert reports[-1] == ("t", {0: 3, 1: 1, 2: 0}, 0)
    acc.node_polled(0, 100.6, can_drain=False)
    acc.report_load(cluster)
    assert reports[-1] == ("t", {1: 1, 2: 0}, 1)
    acc.node_polled(0, 100.7, can_drain=True)
    acc.report_load(cluster)
    assert reports[-1][2] == 0


def test_memory_is_reserved_per_batch_and_a_full_buffer_blocks_until_released():
    clock = Clock()
    memory = BufferMemory(400)
    acc = accumulator(clock, memory=memory)
    append(acc, 0, b"a")
    append(acc, 0, b"b")
    assert memory.available == 200
    append(acc, 1, b"c")
    assert memory.available == 0
    with pytest.raises(KafkaException) as raised:
        acc.append(TopicPartition("t", 2), 0, None, b"d", NO_HEADERS, None, 0.0)
    assert raised.value.name == "_QUEUE_FULL"
    released = threading.Event()

    def release_later() -> None:
        released.wait(5)
        batch = acc.drain(cluster_with({("t", 0): 0}), [0], 10_000, clock.now)[0][0]
        acc.finished(batch)

    thread = threading.Thread(target=release_later)
    thread.start()
    released.set()
    acc.append(TopicPartition("t", 2), 0, None, b"d", NO_HEADERS, None, time.monotonic() + 10)
    thread.join(5)
    assert memory.available == 0


def test_futures_resolve_per_record_and_callbacks_run_before_waiters_wake():
    batch = new_batch()
    first = batch.try_append(5, b"k", b"value", NO_HEADERS)
    second = batch.try_append(6, None, None, NO_HEADERS)
    calls = []
    batch.waiters.append((first, lambda metadata, error: calls.append((metadata, first.done()))))
    assert not first.done()
    with pytest.raises(KafkaException) as raised:
        first.get(0)
    assert raised.value.name == "_TIMED_OUT"
    batch.complete(40, -1, None)
    assert calls[0][0].offset == 40 and calls[0][1] is False
    assert second.get(0)[2:] == (41, 6, -1, -1)
    assert first.get(0)[4:] == (1, 5)
    failed = new_batch()
    future = failed.try_append(1, None, b"x", NO_HEADERS)
    failed.complete(-1, -1, KafkaException(ErrorCode.NOT_ENOUGH_REPLICAS, "t-0"))
    assert future.exception(0).name == "NOT_ENOUGH_REPLICAS"
    with pytest.raises(KafkaException):
        future.result(0)


def test_log_append_time_replaces_the_record_timestamp():
    batch = new_batch()
    future = batch.try_append(5, None, b"v", NO_HEADERS)
    batch.complete(0, 999, None)
    assert future.get(0).timestamp == 999


def test_the_identity_numbers_each_partition_and_keeps_a_retry_sequence():
    identity = ProducerIdentity()
    identity.set(9, 0)
    batches = [new_batch(partition=partition) for partition in (0, 0, 1)]
    for batch in batches:
        batch.try_append(0, None, b"a", NO_HEADERS)
        batch.try_append(0, None, b"b", NO_HEADERS)
        identity.stamp(batch)
    assert [(batch.producer_id, batch.base_sequence) for batch in batches] == [(9, 0), (9, 2), (9, 0)]
    identity.stamp(batches[1])
    assert batches[1].base_sequence == 2
    assert identity.has_earlier_pending(batches[1])
    identity.acknowledged(batches[0])
    assert not identity.has_earlier_pending(batches[1])
    identity.reset()
    identity.set(10, 0)
    identity.stamp(batches[1])
    assert (batches[1].producer_id, batches[1].base_sequence) == (10, 0)


def test_wakeups_from_sending_threads_coalesce_until_the_loop_runs_one():
    """A batch filling while a wakeup is on its way to the sender's loop adds no second one (each
    costs a system call); once the loop ran it, the next batch wakes the sender again."""
    sender = Sender(None, accumulator(Clock()), SenderSettings(  # type: ignore[arg-type]
        acks=-1, retries=0, request_timeout_ms=1000, max_in_flight=5, max_request_size=1 << 20, compression=0,
        compression_level=None, idempotent=False, transaction_timeout_ms=60_000))
    scheduled = []

    class Loop:
        def is_closed(self) -> bool:
            return False

        def call_soon_threadsafe(self, callback) -> None:
            scheduled.append(callback)

    sender._loop = Loop()  # type: ignore[assignment]
    sender.wakeup_threadsafe()
    sender.wakeup_threadsafe()
    assert len(scheduled) == 1
    scheduled[0]()  # the loop runs it
    sender.wakeup_threadsafe()
    assert len(scheduled) == 2
