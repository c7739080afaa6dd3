"""Transactions on a 3-broker cluster (RF 3, min.insync.replicas 2): librdkafka's transactional
producer commits with send_offsets_to_transaction and aborts, its transaction coordinator is
killed (-9) in the middle of a transaction, the new leader of the `__transaction_state`
partition loads it and the producer's commit goes through there. A read_committed consumer then
finds every committed record once, in order per partition, and none of the aborted ones."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from gregor.client import AdminClient as GregorAdmin
from tests.cluster.brokers import Cluster

pytestmark = pytest.mark.slow

TOPIC, PARTITIONS = "copied", 2


@pytest.fixture
def cluster(tmp_path):
    nodes = Cluster(tmp_path, overrides={"min.insync.replicas": "2", "transaction.state.log.num.partitions": "2"})
    nodes.start()
    yield nodes
    nodes.stop()


def coordinator_of(cluster: Cluster, txn_id: str) -> int:
    admin = GregorAdmin({"bootstrap.servers": cluster.bootstrap})
    try:
        found = admin.describe_transactions([txn_id], timeout=30)[txn_id]
    finally:
        admin.close()
    assert not isinstance(found, Exception), found
    return found.coordinator_id


def send(producer: Producer, values: range) -> None:
    for value in values:
        producer.produce(TOPIC, str(value).encode(), partition=value % PARTITIONS)


def read_committed(cluster: Cluster, count: int) -> dict[int, list[int]]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    idle_until = None
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            if sum(map(len, got.values())) >= count:
                idle_until = idle_until or time.monotonic() + 2  # a little longer: nothing more must come
                if time.monotonic() > idle_until:
                    break
            continue
        got[message.partition()].append(int(message.value()))
    consumer.close()
    return got


def test_commit_survives_the_coordinator_being_killed(cluster):
    cluster.create_topic(TOPIC, PARTITIONS)
    cluster.create_topic("input", 1)
    txn_id = f"copier-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 60000})
    producer.init_transactions(60)
    producer.begin_transaction()
    send(producer, range(0, 50))
    group = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "copier"})
    producer.send_offsets_to_transaction([TopicPartition("input", 0, 50)], group.consumer_group_metadata(), 30)
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
    producer.commit_transaction(120)  # finds the new coordinator, which loaded the Ongoing transaction
    assert coordinator_of(cluster, txn_id) != killed
    cluster.brokers[killed].restart()

    got = read_committed(cluster, 100)
    for partition in range(PARTITIONS):
        assert got[partition] == [v for v in range(100) if v % PARTITIONS == partition], got
    committed = group.committed([TopicPartition("input", 0)], 30)
    assert committed[0].offset == 50
    group.close()


def test_three_clients_transactions_on_the_cluster(cluster):
    """confluent-kafka's, kafka-python's and aiokafka's transactional producers against the
    cluster: commit, abort, send_offsets_to_transaction; read back with read_committed."""
    from tests.interop.test_transactional_producers import COMMITTED_FIRST, COMMITTED_LAST, GROUP_OFFSET, WRITERS
    from tests.interop.test_transactions import READERS
    for client, write in WRITERS.items():
        topic, group = f"three-{client}", f"group-{client}"
        cluster.create_topic(topic, 1)
        write(cluster.bootstrap, f"txn-{client}", topic, group)
        reader = READERS[client](cluster.bootstrap, topic, "read_committed")
        try:
            expected = COMMITTED_FIRST + COMMITTED_LAST
            assert reader.read(30, len(expected)) == expected, client
            assert reader.read(1, 1) == [], client
        finally:
            reader.close()
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
        assert consumer.committed([TopicPartition(topic, 0)], 30)[0].offset == GROUP_OFFSET, client
        consumer.close()
