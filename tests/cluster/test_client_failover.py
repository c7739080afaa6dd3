"""Clients nobody here wrote — kafka-python, aiokafka, librdkafka — and Gregor's own keep producing
and consuming through leader changes of a replication-factor-3 partition: its leader is killed
(-9) while they produce, and the next one while they consume. Every acknowledged record is read
back, in order."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from tests.cluster.brokers import Cluster

pytestmark = pytest.mark.slow

FIRST, SECOND = range(0, 150), range(150, 300)


@pytest.fixture
def cluster(tmp_path):
    nodes = Cluster(tmp_path, overrides={"min.insync.replicas": "2"}).start()
    yield nodes
    nodes.stop()


def kill_leader(cluster: Cluster, topic: str) -> int:
    leader = cluster.leader_of(topic, 0)
    cluster.brokers[leader].kill9()
    cluster.wait_for(topic, lambda states: states[0][0] not in (-1, leader))
    return leader


def heal(cluster: Cluster, topic: str, killed: int) -> None:
    cluster.brokers[killed].restart()
    cluster.wait_for_full_isr(topic)


def check(values: list[int]) -> None:
    """Everything sent, in order (a retried, non-idempotent send may repeat a record)."""
    first_seen = list(dict.fromkeys(values))
    assert first_seen == list(FIRST) + list(SECOND)


def scenario(cluster: Cluster, topic: str, send, read) -> None:
    """send(values) returns once they are acknowledged; read(count, midway) returns the values read,
    calling midway() after the first half."""
    cluster.create_topic(topic, 1)
    send(FIRST)
    killed = kill_leader(cluster, topic)
    send(SECOND)
    heal(cluster, topic, killed)
    victims = []

    def midway() -> None:
        victims.append(kill_leader(cluster, topic))
    check(read(len(FIRST) + len(SECOND), midway))
    heal(cluster, topic, victims[0])


def test_kafka_python(cluster):
    from kafka import KafkaConsumer, KafkaProducer
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=20, retry_backoff_ms=200,
                             request_timeout_ms=10000)

    def send(values: range) -> None:
        for future in [producer.send("kp", str(value).encode()) for value in values]:
            future.get(60)

    def read(count: int, midway) -> list[int]:
        consumer = KafkaConsumer("kp", bootstrap_servers=cluster.bootstrap, group_id="kp",
                                 auto_offset_reset="earliest", consumer_timeout_ms=60000)
        values: list[int] = []
        for message in consumer:
            values.append(int(message.value))
            if len(values) == count // 2:
                midway()
            if len(set(values)) == count:
                break
        consumer.close()
        return values
    try:
        scenario(cluster, "kp", send, read)
    finally:
        producer.close()


def test_aiokafka(cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def send_all(values: range) -> None:
        pending = list(values)
        for _ in range(10):  # aiokafka surfaces leader loss to the caller, who retries with a new producer
            producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", enable_idempotence=True,
                                        request_timeout_ms=5000, retry_backoff_ms=200, metadata_max_age_ms=1000)
            await producer.start()
            try:
                while pending:
                    await asyncio.wait_for(producer.send_and_wait("ak", str(pending[0]).encode()), 15)
                    pending.pop(0)
                return
            except Exception:  # noqa: BLE001 - retriable until the new leader is known
                await asyncio.sleep(0.5)
            finally:
                await producer.stop()
        raise AssertionError(f"records from {pending[0]} were never acknowledged")

    async def read_all(count: int, midway) -> list[int]:
        # No auto-commit: aiokafka's final commit in stop() retries forever without looking the
        # coordinator up again once it is closing, so a stop soon after the coordinator died hangs.
        consumer = AIOKafkaConsumer("ak", bootstrap_servers=cluster.bootstrap, group_id="ak",
                                    auto_offset_reset="earliest", metadata_max_age_ms=1000,
                                    enable_auto_commit=False)
        await consumer.start()
        values: list[int] = []
        try:
            deadline = time.monotonic() + 90
            while len(set(values)) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for messages in batches.values():
                    values.extend(int(message.value) for message in messages)
                if len(values) >= count // 2 and not getattr(midway, "done", False):
                    midway.done = True
                    await asyncio.get_running_loop().run_in_executor(None, midway)
        finally:
            # aiokafka's fetcher re-raises the cancellation of a fetch that is backing off from
            # the killed leader when it closes; the consumer is closed all the same.
            with contextlib.suppress(asyncio.CancelledError):
                await consumer.stop()
        return values

    scenario(cluster, "ak", lambda values: asyncio.run(send_all(values)),
             lambda count, midway: asyncio.run(read_all(count, midway)))


def test_confluent_kafka(cluster):
    from confluent_kafka import Consumer, Producer
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})

    def send(values: range) -> None:
        for value in values:
            producer.produce("ck", str(value).encode())
        assert producer.flush(60) == 0

    def read(count: int, midway) -> list[int]:
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ck",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["ck"])
        values: list[int] = []
        deadline = time.monotonic() + 90
        while len(set(values)) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(int(message.value()))
                if len(values) == count // 2:
                    midway()
        consumer.close()
        return values
    scenario(cluster, "ck", send, read)


def test_gregor_client(cluster):
    from gregor import Consumer, Producer
    producer = Producer(bootstrap_servers=cluster.bootstrap, acks="all")

    def send(values: range) -> None:
        for future in [producer.send("gk", str(value).encode()) for value in values]:
            future.get(60)

    def read(count: int, midway) -> list[int]:
        consumer = Consumer(bootstrap_servers=cluster.bootstrap, group_id="gk", auto_offset_reset="earliest")
        consumer.subscribe(["gk"])
        values: list[int] = []
        deadline = time.monotonic() + 90
        try:
            while len(set(values)) < count and time.monotonic() < deadline:
                for record in consumer.poll(0.5):
                    values.append(int(record.value))
                    if len(values) == count // 2:
                        midway()
        finally:
            consumer.close()
        return values
    try:
        scenario(cluster, "gk", send, read)
    finally:
        producer.close()


def test_librdkafka_follows_the_leader_away_from_a_paused_broker(cluster):
    """A leader frozen (SIGSTOP) past its session loses the partition while librdkafka still
    fetches from it; once thawed it answers FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER, and the
    consumer must act on that error (refresh metadata, fetch from the new leader) rather than wait
    for its next periodic metadata refresh, here ten minutes away."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    cluster.create_topic("thawed", 1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})

    def send(values: range) -> None:
        for value in values:
            producer.produce("thawed", str(value).encode())
        assert producer.flush(60) == 0
    send(FIRST)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "thawed", "enable.auto.commit": False,
                         "topic.metadata.refresh.interval.ms": 600000})
    consumer.assign([TopicPartition("thawed", 0, 0)])
    values: list[int] = []
    try:
        while len(values) < len(FIRST):
            message = consumer.poll(1)
            if message is not None and not message.error():
                values.append(int(message.value()))
        paused = cluster.leader_of("thawed", 0)
        cluster.brokers[paused].pause()
        try:
            cluster.wait_for("thawed", lambda states: states[0][0] not in (-1, paused))
        finally:
            cluster.brokers[paused].resume()
        send(SECOND)
        deadline = time.monotonic() + 60
        while len(values) < len(FIRST) + len(SECOND) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(int(message.value()))
    finally:
        consumer.close()
    check(values)
