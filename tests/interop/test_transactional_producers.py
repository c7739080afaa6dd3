"""Transactional producers nobody here wrote against Gregor's transaction coordinator: librdkafka
(confluent-kafka), kafka-python and aiokafka run init_transactions, commit, abort and
send_offsets_to_transaction; read_committed consumers of the same client see the committed
records in order and never an aborted one, and the transaction's group offsets become visible
only with its commit. A producer fenced by a newer instance, and one whose transaction timed out
and was aborted by the coordinator, cannot commit."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import OffsetFetchRequest, OffsetFetchResponse
from tests.broker_process import BrokerProcess
from tests.interop.test_transactions import READERS
from tests.txn_wire import call

pytestmark = pytest.mark.interop

COMMITTED_FIRST = [b"c0", b"c1", b"c2"]
ABORTED = [b"x0", b"x1"]
COMMITTED_LAST = [b"c3"]
GROUP_OFFSET = 42


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("gregor") / "data"), {
        "transaction.state.log.num.partitions": "4", "offsets.topic.num.partitions": "4",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    process.start()
    yield process
    process.stop()


def new_topic(broker) -> str:
    topic = f"txp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    return topic


def committed_offset(broker, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        (found,) = consumer.committed([TopicPartition(topic, 0)], 10)
        return found.offset
    finally:
        consumer.close()


def stable_offset(broker, group: str, topic: str) -> tuple[ErrorCode, int]:
    """OffsetFetch v7 with require_stable, on the wire: (error, offset) of partition 0."""
    request = OffsetFetchRequest(group_id=group, require_stable=True, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])])
    response = call(broker.port, request, 7, OffsetFetchResponse)
    (partition,) = response.topics[0].partitions
    return ErrorCode(partition.error_code), partition.committed_offset


def run_confluent(bootstrap: str, txn_id: str, topic: str, group: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in COMMITTED_FIRST:
        producer.produce(topic, value)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for value in ABORTED:
        producer.produce(topic, value)
    producer.flush(10)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for value in COMMITTED_LAST:
        producer.produce(topic, value)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    producer.send_offsets_to_transaction([TopicPartition(topic, 0, GROUP_OFFSET)],
                                         consumer.consumer_group_metadata(), 10)
    consumer.close()
    producer.commit_transaction(30)


def run_kafka_python(bootstrap: str, txn_id: str, topic: str, group: str) -> None:
    from kafka import KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for value in COMMITTED_FIRST:
            producer.send(topic, value, partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        for value in ABORTED:
            producer.send(topic, value, partition=0)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        for value in COMMITTED_LAST:
            producer.send(topic, value, partition=0)
        producer.send_offsets_to_transaction({KTopicPartition(topic, 0): OffsetAndMetadata(GROUP_OFFSET, "", -1)},
                                             group)
        producer.commit_transaction()
    finally:
        producer.close()


def run_aiokafka(bootstrap: str, txn_id: str, topic: str, group: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.structs import TopicPartition as ATopicPartition

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        await producer.start()
        try:
            async with producer.transaction():
                for value in COMMITTED_FIRST:
                    await producer.send_and_wait(topic, value, partition=0)
            await producer.begin_transaction()
            for value in ABORTED:
                await producer.send_and_wait(topic, value, partition=0)
            await producer.abort_transaction()
            async with producer.transaction():
                for value in COMMITTED_LAST:
                    await producer.send(topic, value, partition=0)
                await producer.send_offsets_to_transaction({ATopicPartition(topic, 0): GROUP_OFFSET}, group)
        finally:
            await producer.stop()
    asyncio.run(run())


WRITERS = {"confluent-kafka": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}


@pytest.mark.parametrize("client", WRITERS)
def test_transactional_producer_commits_aborts_and_sends_offsets(broker, client):
    topic = new_topic(broker)
    group = f"group-{client}-{uuid.uuid4().hex[:6]}"
    WRITERS[client](broker.bootstrap, f"txn-{client}-{uuid.uuid4().hex[:6]}", topic, group)
    reader = READERS[client](broker.bootstrap, topic, "read_committed")
    try:
        expected = COMMITTED_FIRST + COMMITTED_LAST
        assert reader.read(20, len(expected)) == expected
        assert reader.read(1, 1) == [], "aborted records must never be read"
    finally:
        reader.close()
    assert committed_offset(broker, group, topic) == GROUP_OFFSET


def test_fenced_producer_cannot_commit_and_its_successor_can(broker):
    topic = new_topic(broker)
    txn_id = f"fence-{uuid.uuid4().hex[:6]}"
    old = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    old.init_transactions(30)
    old.begin_transaction()
    old.produce(topic, b"zombie")
    old.flush(10)
    new = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    new.init_transactions(30)  # aborts the zombie's open transaction, bumps the epoch
    with pytest.raises(KafkaException) as raised:
        old.commit_transaction(10)
    assert raised.value.args[0].fatal() and raised.value.args[0].name() == "_FENCED"
    new.begin_transaction()
    new.produce(topic, b"fresh")
    new.commit_transaction(30)
    reader = READERS["confluent-kafka"](broker.bootstrap, topic, "read_committed")
    try:
        assert reader.read(20, 1) == [b"fresh"]
        assert reader.read(1, 1) == []
    finally:
        reader.close()


def test_kafka_python_fenced_producer_gets_producer_fenced(broker):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError, ProducerFencedError
    topic = new_topic(broker)
    txn_id = f"fence-kp-{uuid.uuid4().hex[:6]}"
    old = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=txn_id)
    new = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=txn_id)
    try:
        old.init_transactions()
        new.init_transactions()
        old.begin_transaction()
        with pytest.raises(KafkaError) as raised:
            old.send(topic, b"zombie", partition=0).get(10)
            old.commit_transaction()
        assert isinstance(raised.value, ProducerFencedError)
    finally:
        old.close(1)
        new.close(1)


@pytest.mark.slow
def test_timed_out_transaction_is_aborted_by_the_coordinator(broker):
    topic = new_topic(broker)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"slow-{uuid.uuid4().hex[:6]}",
                         "transaction.timeout.ms": 1000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"too-late")
    producer.flush(10)
    time.sleep(2.5)  # past the timeout and at least one abort scan
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)
    after = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"ok-{uuid.uuid4().hex[:6]}"})
    after.init_transactions(30)
    after.begin_transaction()
    after.produce(topic, b"on-time")
    after.commit_transaction(30)
    reader = READERS["confluent-kafka"](broker.bootstrap, topic, "read_committed")
    try:
        assert reader.read(20, 1) == [b"on-time"], "the aborted transaction no longer holds back the LSO"
        assert reader.read(1, 1) == []
    finally:
        reader.close()


def test_transaction_timeout_above_the_maximum_is_refused(broker):
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"big-{uuid.uuid4().hex[:6]}",
                         "transaction.timeout.ms": 900001, "message.timeout.ms": 300000})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(10)
    assert raised.value.args[0].name() == "INVALID_TRANSACTION_TIMEOUT"


@pytest.mark.slow
def test_restart_reloads_transactions_and_transactional_offsets(tmp_path):
    """kill -9 with one transaction committed (its offsets with it) and one open: after the
    restart the committed offset is back, the open transaction's offset is not, and the new
    producer's InitProducerId aborts the open transaction, whose records stay invisible."""
    process = BrokerProcess(str(tmp_path / "data"), {"transaction.state.log.num.partitions": "2",
                                                     "offsets.topic.num.partitions": "2"})
    process.start()
    try:
        topic, group, txn_id = new_topic(process), "restarted-group", "restarted-txn"
        producer = Producer({"bootstrap.servers": process.bootstrap, "transactional.id": txn_id})
        producer.init_transactions(30)
        metadata = Consumer({"bootstrap.servers": process.bootstrap, "group.id": group})
        for values, offset, commit in (([b"kept"], 10, True), ([b"lost"], 20, False)):
            producer.begin_transaction()
            for value in values:
                producer.produce(topic, value, partition=0)
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)],
                                                 metadata.consumer_group_metadata(), 10)
            if commit:
                producer.commit_transaction(30)
        producer.flush(10)
        metadata.close()
        process.kill9()
        process.restart()
        assert stable_offset(process, group, topic) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)  # still pending
        successor = Producer({"bootstrap.servers": process.bootstrap, "transactional.id": txn_id})
        successor.init_transactions(60)
        assert committed_offset(process, group, topic) == 10
        assert stable_offset(process, group, topic) == (ErrorCode.NONE, 10)
        reader = READERS["confluent-kafka"](process.bootstrap, topic, "read_committed")
        try:
            assert reader.read(20, 1) == [b"kept"]
            assert reader.read(1, 1) == []
        finally:
            reader.close()
    finally:
        process.stop()
