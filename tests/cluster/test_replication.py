"""Replication between real broker processes (one controller, three broker-only nodes): acks=all
records survive the loss of their leader, a restarted replica catches up and rejoins the ISR,
min.insync.replicas refuses what it must, consumer groups move with their coordinator, and the
replicas' logs agree batch for batch afterwards (seed 001/002: LEO, HW, ISR, leader epochs)."""

from __future__ import annotations

import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from confluent_kafka import Consumer, Producer

from gregor.client import Producer as GregorProducer
from gregor.client import KafkaException as GregorKafkaException

from tests.broker_process import free_port
from tests.cluster.brokers import Cluster, replica_batches

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path):
    nodes = Cluster(tmp_path, overrides={"min.insync.replicas": "2"})
    for node in nodes.brokers.values():
        node.overrides["metrics.port"] = str(free_port())
    yield nodes.start()
    nodes.stop()


def metric(node, name: str) -> float:
    """One unlabelled sample of a broker's Prometheus endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{node.overrides['metrics.port']}/metrics", timeout=10) as answer:
        for family in text_string_to_metric_families(answer.read().decode()):
            for sample in family.samples:
                if sample.name == name:
                    return sample.value
    raise AssertionError(f"{name} is not exported")


def produce(bootstrap: str, topic: str, values: range) -> list[int]:
    """Send with an idempotent acks=all producer; the values whose delivery was acknowledged."""
    acknowledged: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "message.timeout.ms": 60000})

    def delivered(error, message) -> None:
        if error is None:
            acknowledged.append(int(message.value()))
    for value in values:
        producer.produce(topic, str(value).encode(), key=str(value % 7).encode(), on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(90) == 0
    return acknowledged


def consume_all(bootstrap: str, topic: str, expected: int, group: str = "check") -> dict[int, list[int]]:
    """Every record of the topic by partition, read by a new consumer group from the start."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    by_partition: dict[int, list[int]] = {}
    deadline = time.monotonic() + 60
    try:
        while sum(map(len, by_partition.values())) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            by_partition.setdefault(message.partition(), []).append(int(message.value()))
    finally:
        consumer.close()
    return by_partition


def test_acknowledged_records_survive_a_killed_leader_and_replicas_agree(cluster):
    cluster.create_topic("orders", 3)
    first = produce(cluster.bootstrap, "orders", range(0, 600))
    victim = cluster.leader_of("orders", 0)
    cluster.brokers[victim].kill9()
    cluster.wait_for("orders", lambda states: all(
        leader not in (-1, victim) and victim not in isr for leader, _, isr in states.values()))
    second = produce(cluster.bootstrap, "orders", range(600, 1200))
    cluster.brokers[victim].restart()
    cluster.wait_for_full_isr("orders")
    acknowledged = first + second
    assert len(acknowledged) == 1200
    read = consume_all(cluster.bootstrap, "orders", len(acknowledged))
    values = [value for records in read.values() for value in records]
    assert sorted(values) == sorted(acknowledged)  # every acknowledged record, exactly once
    for records in read.values():  # in order within a partition (per key, as sent)
        for key in range(7):
            keyed = [value for value in records if value % 7 == key]
            assert keyed == sorted(keyed)
    cluster.stop()
    batches = 0
    for partition in range(3):
        logs = [replica_batches(node, "orders", partition) for node in cluster.brokers.values()]
        assert logs[0] == logs[1] == logs[2]
        batches += len(logs[0])
    assert batches > 0


def test_min_insync_replicas_refuses_acks_all_until_a_follower_returns(cluster):
    cluster.create_topic("payments", 1)
    leader = cluster.leader_of("payments", 0)
    followers = [node_id for node_id in cluster.brokers if node_id != leader]
    for node_id in followers:
        cluster.brokers[node_id].kill9()
    cluster.wait_for("payments", lambda states: states[0][2] == [leader])
    strict = GregorProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=0, enable_idempotence=False)
    relaxed = GregorProducer(bootstrap_servers=cluster.bootstrap, acks=1, enable_idempotence=False)
    try:
        with pytest.raises(GregorKafkaException) as refused:
            strict.send("payments", b"must not be acknowledged").get(30)
        assert "NOT_ENOUGH_REPLICAS" in str(refused.value)
        assert relaxed.send("payments", b"acks=1 is fine").get(30).offset >= 0
        cluster.brokers[followers[0]].restart()
        cluster.wait_for("payments", lambda states: len(states[0][2]) == 2)
        assert strict.send("payments", b"acknowledged again").get(30).offset >= 0
        assert metric(cluster.brokers[leader], "kafka_server_replicamanager_isrexpands_total") >= 1
    finally:
        strict.close()
        relaxed.close()


def test_a_consumer_group_resumes_from_its_commits_after_the_coordinator_dies(cluster):
    cluster.create_topic("events", 2)
    assert len(produce(cluster.bootstrap, "events", range(100))) == 100
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "billing",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["events"])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 100 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert seen == 100
    admin = cluster.admin()
    coordinator = admin.describe_consumer_groups(["billing"])["billing"].result(30).coordinator.id
    cluster.brokers[coordinator].kill9()
    assert len(produce(cluster.bootstrap, "events", range(100, 150))) == 50
    read = consume_all(cluster.bootstrap, "events", 50, group="billing")
    assert sorted(value for records in read.values() for value in records) == list(range(100, 150))
