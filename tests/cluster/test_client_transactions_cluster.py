"""Gregor's transactional producer on a 3-broker cluster (RF 3, min.insync.replicas 2): commit
with send_offsets_to_transaction, abort, and a commit whose transaction coordinator was killed
(-9) mid-transaction, which goes through at the new coordinator. Gregor's and librdkafka's
read_committed consumers then find every committed record once, in order, no aborted one."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentPartition

from gregor.client import Consumer, ConsumerGroupMetadata, Producer, TopicPartition
from tests.cluster.brokers import Cluster
from tests.cluster.test_transactions_cluster import coordinator_of

pytestmark = pytest.mark.slow

TOPIC, PARTITIONS = "copied", 2


@pytest.fixture
def cluster(tmp_path):
    nodes = Cluster(tmp_path, overrides={"min.insync.replicas": "2", "transaction.state.log.num.partitions": "2",
                                         "offsets.topic.num.partitions": "2"})
    nodes.start()
    yield nodes
    nodes.stop()


def send(producer: Producer, values: range) -> None:
    for value in values:
        producer.send(TOPIC, str(value).encode(), partition=value % PARTITIONS)


def read_gregor(bootstrap: str, count: int) -> dict[int, list[int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"})
    consumer.assign([(TOPIC, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            batch = consumer.poll(0.5)
            for record in batch:
                got[record.partition].append(int(record.value))
            if not batch and sum(map(len, got.values())) >= count:
                break
    finally:
        consumer.close()
    return got


def read_confluent(bootstrap: str, count: int) -> dict[int, list[int]]:
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                                  "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([ConfluentPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is None:
                got[message.partition()].append(int(message.value()))
                at_end.discard(message.partition())
            else:
                at_end.add(message.partition())
                if len(at_end) == PARTITIONS and sum(map(len, got.values())) >= count:
                    break
    finally:
        consumer.close()
    return got


def test_gregor_transactions_survive_the_coordinator_being_killed(cluster):
    cluster.create_topic(TOPIC, PARTITIONS)
    cluster.create_topic("input", 1)
    txn_id = f"gregor-copier-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 60000})
    try:
        producer.init_transactions(60)
        producer.begin_transaction()
        send(producer, range(0, 50))
        producer.send_offsets_to_transaction({TopicPartition("input", 0): 50}, ConsumerGroupMetadata("copier"), 30)
        producer.commit_transaction(60)
        producer.begin_transaction()
        send(producer, range(1000, 1010))
        producer.flush(30)
        producer.abort_transaction(60)

        producer.begin_transaction()
        send(producer, range(50, 100))
        producer.flush(30)
        killed = coordinator_of(cluster, txn_id)
        cluster.brokers[killed].kill9()
        producer.commit_transaction(120)  # at the new coordinator, which loaded the Ongoing transaction
        assert coordinator_of(cluster, txn_id) != killed
    finally:
        producer.close()
    cluster.brokers[killed].restart()

    expected = {p: [v for v in range(100) if v % PARTITIONS == p] for p in range(PARTITIONS)}
    assert read_gregor(cluster.bootstrap, 100) == expected
    assert read_confluent(cluster.bootstrap, 100) == expected
    group = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "copier"})
    try:
        assert group.committed([("input", 0)], 30)[TopicPartition("input", 0)].offset == 50
    finally:
        group.close()
