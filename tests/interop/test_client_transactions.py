"""Gregor's transactional producer (sync and asyncio) against a Gregor broker, judged by
read_committed consumers of two clients (Gregor's and librdkafka's): committed records appear
once, aborted ones never; a consume-transform-produce loop commits its group offsets with the
transaction; a second producer with the same transactional.id fences the first; an abortable
error (a record the broker refuses) leaves only abort_transaction, after which the producer
goes on (with a bumped epoch, KIP-360)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentPartition

from gregor.client import (
    AdminClient, Consumer, IllegalStateError, OffsetAndMetadata, Producer, ProducerFencedError,
    TopicPartition, TransactionAbortableError,
)
from gregor.client.admin import NewTopic
from gregor.client.aio import Producer as AioProducer
from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("gregor") / "data"), {
        "transaction.state.log.num.partitions": "2", "offsets.topic.num.partitions": "2"})
    process.start()
    yield process
    process.stop()


def new_topic(bootstrap: str, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    topic = f"ctx-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        created = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})], timeout=20)
        assert not isinstance(created[topic], Exception), created[topic]
    finally:
        admin.close()
    return topic


def read_gregor(bootstrap: str, topic: str, expected: int, partitions: int = 1) -> list[bytes]:
    """Values a read_committed Gregor consumer finds (waiting a little past `expected` for extras)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest"})
    consumer.assign([(topic, p) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            batch = consumer.poll(0.3)
            values.extend(record.value for record in batch)
            if len(values) >= expected and not batch:
                break
    finally:
        consumer.close()
    return values


def read_confluent(bootstrap: str, topic: str, expected: int, partitions: int = 1) -> list[bytes]:
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{uuid.uuid4().hex[:6]}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "enable.partition.eof": True})
    consumer.assign([ConfluentPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.3)
            if message is None:
                continue
            if message.error() is None:
                values.append(message.value())
            else:
                at_end.add(message.partition())
                if len(values) >= expected and len(at_end) == partitions:
                    break
    finally:
        consumer.close()
    return values


def transactional(bootstrap: str, txn_id: str, **extra) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **extra})


def test_commit_and_abort_as_read_committed_consumers_see_them(broker):
    topic = new_topic(broker.bootstrap, partitions=2)
    producer = transactional(broker.bootstrap, f"t-{uuid.uuid4().hex[:6]}")
    try:
        with pytest.raises(IllegalStateError, match="init_transactions"):
            producer.begin_transaction()
        producer.init_transactions(30)
        with pytest.raises(IllegalStateError, match="begin_transaction"):
            producer.send(topic, b"outside")
        producer.begin_transaction()
        for index in range(4):
            producer.send(topic, b"c%d" % index, partition=index % 2)
        producer.commit_transaction(30)
        producer.begin_transaction()
        for index in range(3):
            producer.send(topic, b"x%d" % index, partition=index % 2)
        producer.flush(10)  # written to the log, then aborted
        producer.abort_transaction(30)
        producer.begin_transaction()
        producer.send(topic, b"c4", partition=0)
        producer.commit_transaction(30)
        with pytest.raises(IllegalStateError, match="commit_transaction in state READY"):
            producer.commit_transaction(5)
    finally:
        producer.close()
    expected = sorted([b"c0", b"c1", b"c2", b"c3", b"c4"])
    assert sorted(read_gregor(broker.bootstrap, topic, 5, partitions=2)) == expected
    assert sorted(read_confluent(broker.bootstrap, topic, 5, partitions=2)) == expected


def test_consume_transform_produce_commits_offsets_with_the_transaction(broker):
    source, sink = new_topic(broker.bootstrap), new_topic(broker.bootstrap)
    group = f"ctp-{uuid.uuid4().hex[:6]}"
    with Producer({"bootstrap.servers": broker.bootstrap}) as plain:
        for index in range(6):
            plain.send(source, b"%d" % index)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    producer = transactional(broker.bootstrap, f"ctp-{uuid.uuid4().hex[:6]}")
    try:
        producer.init_transactions(30)
        consumer.subscribe([source])
        records: list = []
        deadline = time.monotonic() + 30
        while len(records) < 6 and time.monotonic() < deadline:
            records.extend(consumer.poll(0.5))
        assert [record.value for record in records] == [b"%d" % index for index in range(6)]
        metadata = consumer.group_metadata()
        assert metadata.group_id == group and metadata.generation_id >= 1 and metadata.member_id

        # a first attempt is aborted: neither its output nor its offsets count
        producer.begin_transaction()
        for record in records[:3]:
            producer.send(sink, record.value * 10)
        producer.send_offsets_to_transaction({TopicPartition(source, 0): records[2].offset + 1}, metadata)
        producer.abort_transaction(30)
        assert consumer.committed([(source, 0)], 10)[TopicPartition(source, 0)] is None

        producer.begin_transaction()
        for record in records:
            producer.send(sink, record.value * 10)
        producer.send_offsets_to_transaction(
            {TopicPartition(source, 0): OffsetAndMetadata(records[-1].offset + 1, "batch-1")}, metadata)
        producer.commit_transaction(30)
        committed = consumer.committed([(source, 0)], 10)[TopicPartition(source, 0)]
        assert committed.offset == 6 and committed.metadata == "batch-1"
    finally:
        producer.close()
        consumer.close()
    assert read_gregor(broker.bootstrap, sink, 6) == [b"%d" % index * 10 for index in range(6)]


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(broker):
    topic = new_topic(broker.bootstrap)
    txn_id = f"fence-{uuid.uuid4().hex[:6]}"
    first, second = transactional(broker.bootstrap, txn_id), transactional(broker.bootstrap, txn_id)
    try:
        first.init_transactions(30)
        first.begin_transaction()
        first.send(topic, b"zombie")
        first.flush(10)
        second.init_transactions(30)  # aborts the first one's transaction and bumps the epoch
        with pytest.raises(ProducerFencedError) as raised:
            first.commit_transaction(30)
        assert raised.value.error.fatal
        with pytest.raises(ProducerFencedError):
            first.begin_transaction()
        with pytest.raises(ProducerFencedError):
            first.abort_transaction(5)
        second.begin_transaction()
        second.send(topic, b"winner")
        second.commit_transaction(30)
    finally:
        first.close()
        second.close()
    assert read_gregor(broker.bootstrap, topic, 1) == [b"winner"]
    assert read_confluent(broker.bootstrap, topic, 1) == [b"winner"]


def test_after_an_abortable_error_only_abort_is_allowed_then_the_producer_goes_on(broker):
    topic = new_topic(broker.bootstrap, config={"max.message.bytes": "2000"})
    producer = transactional(broker.bootstrap, f"abortable-{uuid.uuid4().hex[:6]}")
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.send(topic, b"before")
        refused = producer.send(topic, b"x" * 5000)  # the broker refuses it: MESSAGE_TOO_LARGE
        with pytest.raises(TransactionAbortableError) as raised:
            producer.commit_transaction(30)
        assert raised.value.error.txn_requires_abort
        assert refused.exception(10) is not None
        epoch = producer._sender.identity.producer_epoch
        with pytest.raises(TransactionAbortableError):
            producer.send(topic, b"more")
        with pytest.raises(TransactionAbortableError):
            producer.commit_transaction(5)
        producer.abort_transaction(30)
        assert producer._sender.identity.producer_epoch == epoch + 1  # the sequence gap bumped it
        producer.begin_transaction()
        producer.send(topic, b"after")
        producer.commit_transaction(30)
    finally:
        producer.close()
    assert read_gregor(broker.bootstrap, topic, 1) == [b"after"]
    assert read_confluent(broker.bootstrap, topic, 1) == [b"after"]


def test_the_asyncio_producer_commits_aborts_and_is_fenced(broker):
    topic = new_topic(broker.bootstrap)
    txn_id = f"aio-{uuid.uuid4().hex[:6]}"

    async def scenario() -> None:
        async with AioProducer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id}) as producer:
            await producer.init_transactions(30)
            producer.begin_transaction()
            await producer.enqueue(topic, b"a0")
            await producer.send(topic, b"a1")
            await producer.commit_transaction(30)
            producer.begin_transaction()
            await producer.send(topic, b"gone")
            await producer.abort_transaction(30)
            producer.begin_transaction()
            await producer.send(topic, b"late")
            async with AioProducer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id}) as newer:
                await newer.init_transactions(30)
                with pytest.raises(ProducerFencedError):
                    await producer.commit_transaction(30)
                newer.begin_transaction()
                await newer.send(topic, b"a2")
                await newer.commit_transaction(30)
    asyncio.run(scenario())
    assert read_gregor(broker.bootstrap, topic, 3) == [b"a0", b"a1", b"a2"]
    assert read_confluent(broker.bootstrap, topic, 3) == [b"a0", b"a1", b"a2"]


def test_a_transaction_handed_over_is_committed_or_aborted_by_another_producer(broker):
    """Two-phase commit across processes (Flink's sink, the Spark exactly-once sink): the writer
    flushes and hands over its id and epoch, the committer resumes and ends the transaction."""
    topic = new_topic(broker.bootstrap)
    txn_id = f"handover-{uuid.uuid4().hex[:6]}"
    handles = []
    for value in (b"kept", b"dropped"):
        writer = transactional(broker.bootstrap, txn_id)
        writer.init_transactions(30)
        writer.begin_transaction()
        writer.send(topic, value)
        writer.flush(10)
        handles.append(writer.transaction_handle())
        writer.close()  # the transaction stays open
        committer = transactional(broker.bootstrap, txn_id)
        try:
            committer.resume_transaction(handles[-1])
            with pytest.raises(IllegalStateError, match="resumed"):
                committer.send(topic, b"more")
            if value == b"kept":
                committer.commit_transaction(30)
            else:
                committer.abort_transaction(30)
        finally:
            committer.close()
    assert handles[1].producer_epoch > handles[0].producer_epoch
    # a stale handle (an epoch a newer producer has moved past) cannot commit
    stale = transactional(broker.bootstrap, txn_id)
    try:
        stale.resume_transaction(handles[0])
        with pytest.raises(ProducerFencedError):
            stale.commit_transaction(30)
    finally:
        stale.close()
    assert read_gregor(broker.bootstrap, topic, 1) == [b"kept"]
    assert read_confluent(broker.bootstrap, topic, 1) == [b"kept"]
