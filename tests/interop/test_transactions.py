"""Transactions, partition side, against a real broker: transactional batches produced with a
producer id and epoch, COMMIT/ABORT markers written with WriteTxnMarkers (as the transaction
coordinator will), read by confluent-kafka, kafka-python, aiokafka (and Gregor's) consumers in read_committed
(no aborted record, committed ones in order, a stop at the open transaction until its commit) and
read_uncommitted (everything), plus the wire: Fetch's last stable offset and aborted transactions,
ListOffsets by isolation level, DescribeProducers and an administrative abort (kafka-python's
admin client, KIP-664), the markers' fencing errors."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import AbortTransactionSpec

from gregor.protocol.error_codes import ErrorCode

from tests.txn_wire import (
    READ_COMMITTED, READ_UNCOMMITTED, batch, fetch, init_producer_id, latest_offset, produce, write_markers,
)

pytestmark = pytest.mark.interop

COORDINATOR_EPOCH = 3
BEFORE_COMMIT = [b"a0", b"a1", b"c0"]
AFTER_COMMIT = [b"a2"]
UNCOMMITTED = [b"a0", b"a1", b"b0", b"c0", b"b1", b"a2", b"b2"]


class Scenario:
    """One partition holding, by offset: A's transaction [a0 a1] (0-1), B's [b0] (2), A's COMMIT (3),
    C's idempotent non-transactional c0 (4), B's b1 (5), B's ABORT (6), A's open transaction [a2] (7),
    B's next transaction [b2] (8); `finish` then commits A (9) and aborts B (10)."""

    def __init__(self, broker) -> None:
        self.port = broker.port
        self.topic = f"txn-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(self.topic, 1, 1)])[self.topic].result(10)
        self.a, self.b, self.c = (init_producer_id(self.port) for _ in range(3))
        self._produce(batch([b"a0", b"a1"], self.a, 0, 0), 0)
        self._produce(batch([b"b0"], self.b, 0, 0), 2)
        assert self._markers(self.a, True) == ErrorCode.NONE
        self._produce(batch([b"c0"], self.c, 0, 0, transactional=False), 4)
        self._produce(batch([b"b1"], self.b, 0, 1), 5)
        assert self._markers(self.b, False) == ErrorCode.NONE
        self._produce(batch([b"a2"], self.a, 0, 2), 7)
        self._produce(batch([b"b2"], self.b, 0, 2), 8)

    def _produce(self, records: bytes, expected_offset: int) -> None:
        assert produce(self.port, self.topic, 0, records) == (ErrorCode.NONE, expected_offset)

    def _markers(self, producer_id: int, commit: bool, coordinator_epoch: int = COORDINATOR_EPOCH,
                 producer_epoch: int = 0) -> ErrorCode:
        answers = write_markers(self.port, producer_id, producer_epoch, commit, {self.topic: [0]}, coordinator_epoch)
        return answers[(self.topic, 0)]

    def finish(self) -> None:
        assert self._markers(self.a, True) == ErrorCode.NONE
        assert self._markers(self.b, False) == ErrorCode.NONE


@pytest.fixture
def scenario(broker) -> Scenario:
    return Scenario(broker)


def test_fetch_list_offsets_and_describe_producers_on_the_wire(broker, scenario):
    port, topic = scenario.port, scenario.topic
    committed = fetch(port, topic, 0, 0, READ_COMMITTED)
    assert (committed.error_code, committed.high_watermark, committed.last_stable_offset) == (0, 9, 7)
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(scenario.b, 2)]
    uncommitted = fetch(port, topic, 0, 0, READ_UNCOMMITTED)
    assert uncommitted.last_stable_offset == 7 and not uncommitted.aborted_transactions
    assert len(uncommitted.records) > len(committed.records)
    assert latest_offset(port, topic, 0, READ_COMMITTED) == 7
    assert latest_offset(port, topic, 0, READ_UNCOMMITTED) == 9
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (state,) = admin.describe_producers([TopicPartition(topic, 0)]).values()
    finally:
        admin.close()
    assert {p.producer_id: (p.current_transaction_start_offset, p.coordinator_epoch, p.last_sequence)
            for p in state.active_producers} == {scenario.a: (7, COORDINATOR_EPOCH, 2),
                                                 scenario.b: (8, COORDINATOR_EPOCH, 2),
                                                 scenario.c: (-1, -1, 0)}
    scenario.finish()
    done = fetch(port, topic, 0, 0, READ_COMMITTED)
    assert (done.high_watermark, done.last_stable_offset) == (11, 11)
    assert [(t.producer_id, t.first_offset) for t in done.aborted_transactions] == [(scenario.b, 2), (scenario.b, 8)]
    assert latest_offset(port, topic, 0, READ_COMMITTED) == 11


def test_markers_are_fenced_and_refused_as_kafka_does(broker, scenario):
    assert scenario._markers(scenario.a, True, coordinator_epoch=COORDINATOR_EPOCH - 1) == \
        ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert produce(scenario.port, scenario.topic, 0, batch([b"x"], scenario.a, 1, 0)) == (ErrorCode.NONE, 9)
    assert scenario._markers(scenario.a, True, producer_epoch=0) == ErrorCode.INVALID_PRODUCER_EPOCH
    answers = write_markers(scenario.port, scenario.a, 1, True, {"no-such-topic": [0], scenario.topic: [5]})
    assert answers == {("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       (scenario.topic, 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    # a non-transactional write inside the producer's open transaction
    assert produce(scenario.port, scenario.topic, 0, batch([b"y"], scenario.a, 1, 1, transactional=False))[0] == \
        ErrorCode.INVALID_TXN_STATE


def test_a_broker_killed_with_open_transactions_recovers_them(broker_factory):
    """kill -9, then an unclean start: recovery replays the producer state (open transactions and
    the aborted-transaction index) from the log."""
    node = broker_factory()
    scenario = Scenario(node)
    node.kill9()
    node.restart()
    committed = fetch(node.port, scenario.topic, 0, 0, READ_COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (9, 7)
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(scenario.b, 2)]
    scenario.finish()
    assert latest_offset(node.port, scenario.topic, 0, READ_COMMITTED) == 11


def test_an_administrative_abort_closes_a_hanging_transaction(broker, scenario):
    """kafka-transactions.sh abort's path (KIP-664): DescribeProducers finds the open transaction,
    WriteTxnMarkers aborts it with the producer's coordinator epoch."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        partition = TopicPartition(scenario.topic, 0)
        (state,) = admin.describe_producers([partition]).values()
        hanging = [p for p in state.active_producers if p.current_transaction_start_offset >= 0]
        for producer in hanging:
            admin.abort_transaction(AbortTransactionSpec(partition, producer.producer_id, producer.producer_epoch,
                                                         producer.coordinator_epoch))
        (state,) = admin.describe_producers([partition]).values()
    finally:
        admin.close()
    assert {p.current_transaction_start_offset for p in state.active_producers} == {-1}
    assert latest_offset(scenario.port, scenario.topic, 0, READ_COMMITTED) == 11
    aborted = fetch(scenario.port, scenario.topic, 0, 0, READ_COMMITTED).aborted_transactions
    assert sorted((t.producer_id, t.first_offset) for t in aborted) == sorted(
        [(scenario.b, 2), (scenario.a, 7), (scenario.b, 8)])


# -- consumers: each client reads the scenario's partition from offset 0, assigned (no group)

class ConfluentReader:
    def __init__(self, bootstrap: str, topic: str, isolation: str) -> None:
        from confluent_kafka import Consumer, TopicPartition
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                                  "isolation.level": isolation, "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition(topic, 0, 0)])

    def read(self, seconds: float, count: int) -> list[bytes]:
        got: list[bytes] = []
        deadline = time.monotonic() + seconds
        while len(got) < count and time.monotonic() < deadline:
            message = self.consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                got.append(message.value())
        return got

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonReader:
    def __init__(self, bootstrap: str, topic: str, isolation: str) -> None:
        from kafka import KafkaConsumer, TopicPartition
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                                      group_id=None, fetch_max_wait_ms=100)
        partition = TopicPartition(topic, 0)
        self.consumer.assign([partition])
        self.consumer.seek(partition, 0)

    def read(self, seconds: float, count: int) -> list[bytes]:
        got: list[bytes] = []
        deadline = time.monotonic() + seconds
        while len(got) < count and time.monotonic() < deadline:
            for records in self.consumer.poll(timeout_ms=200).values():
                got.extend(record.value for record in records)
        return got

    def close(self) -> None:
        self.consumer.close()


class AioKafkaReader:
    def __init__(self, bootstrap: str, topic: str, isolation: str) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition
        self.loop = asyncio.new_event_loop()

        async def start():
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                        enable_auto_commit=False, fetch_max_wait_ms=100)
            await consumer.start()
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            consumer.seek(partition, 0)
            return consumer
        self.consumer = self.loop.run_until_complete(start())

    def read(self, seconds: float, count: int) -> list[bytes]:
        async def read() -> list[bytes]:
            got: list[bytes] = []
            deadline = time.monotonic() + seconds
            while len(got) < count and time.monotonic() < deadline:
                for records in (await self.consumer.getmany(timeout_ms=200)).values():
                    got.extend(record.value for record in records)
            return got
        return self.loop.run_until_complete(read())

    def close(self) -> None:
        self.loop.run_until_complete(self.consumer.stop())
        self.loop.close()


class GregorReader:
    def __init__(self, bootstrap: str, topic: str, isolation: str) -> None:
        from gregor.client.consumer import Consumer
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                                  "fetch.max.wait.ms": 100}, auto_offset_reset="earliest")
        self.consumer.assign([(topic, 0)])

    def read(self, seconds: float, count: int) -> list[bytes]:
        got: list[bytes] = []
        deadline = time.monotonic() + seconds
        while len(got) < count and time.monotonic() < deadline:
            got.extend(record.value for record in self.consumer.poll(0.2))
        return got

    def close(self) -> None:
        self.consumer.close()


READERS = {"confluent-kafka": ConfluentReader, "kafka-python": KafkaPythonReader, "aiokafka": AioKafkaReader,
           "gregor": GregorReader}


@pytest.mark.parametrize("client", READERS)
def test_read_committed_consumers_skip_aborted_and_stop_at_the_open_transaction(broker, scenario, client):
    reader = READERS[client](broker.bootstrap, scenario.topic, "read_committed")
    try:
        assert reader.read(20, len(BEFORE_COMMIT)) == BEFORE_COMMIT
        assert reader.read(1.5, 1) == [], "records of the open transaction must wait for its commit"
        scenario.finish()
        assert reader.read(20, len(AFTER_COMMIT)) == AFTER_COMMIT
        assert reader.read(1, 1) == [], "b2 was aborted"
    finally:
        reader.close()


@pytest.mark.parametrize("client", READERS)
def test_read_uncommitted_consumers_see_every_record(broker, scenario, client):
    reader = READERS[client](broker.bootstrap, scenario.topic, "read_uncommitted")
    try:
        assert reader.read(20, len(UNCOMMITTED)) == UNCOMMITTED
    finally:
        reader.close()
