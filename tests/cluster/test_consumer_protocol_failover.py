"""A KIP-848 group (librdkafka, group.protocol=consumer) on three brokers while the broker that
coordinates it is killed -9 and restarted: the new leader of its `__consumer_offsets` partition
replays the group, the members carry on, and every record is processed with its offset committed."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from gregor.coordinator.partitioning import partition_for
from tests.cluster.brokers import Cluster
from tests.interop.test_consumer_protocol import Member
from tests.interop.test_groups import wait_until

pytestmark = pytest.mark.slow

GROUP, TOPIC = "failover-848", "events"


def produce(bootstrap: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    for i in range(start, start + count):
        producer.produce(TOPIC, value=b"%d" % i, partition=i % 6)
    assert producer.flush(60) == 0


def committed_total(bootstrap: str) -> int:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        found = reader.committed([TopicPartition(TOPIC, p) for p in range(6)], timeout=10)
    finally:
        reader.close()
    return sum(max(tp.offset, 0) for tp in found)


def until_committed(bootstrap: str, total: int, step) -> None:
    deadline = time.monotonic() + 90
    while committed_total(bootstrap) < total:
        assert time.monotonic() < deadline, f"the group did not process and commit {total} records"
        for _ in range(10):
            step()


def test_the_group_survives_the_kill_of_its_coordinator(tmp_path):
    cluster = Cluster(tmp_path, overrides={"group.consumer.heartbeat.interval.ms": "500",
                                           "group.consumer.min.heartbeat.interval.ms": "500",
                                           "group.consumer.min.session.timeout.ms": "10000",
                                           "group.consumer.session.timeout.ms": "10000"}).start()
    members: list[Member] = []
    try:
        cluster.create_topic(TOPIC, 6)
        members = [Member(cluster.bootstrap, GROUP, TOPIC) for _ in range(3)]

        def poll_and_commit() -> None:
            for member in members:
                before = len(member.records)
                member.poll()
                if len(member.records) > before:
                    try:
                        member.consumer.commit(asynchronous=False)
                    except KafkaException:  # a commit racing the coordinator's move is retried by the next one
                        pass

        wait_until(lambda: sorted(len(m.owned) for m in members) == [2, 2, 2], 60, "a balanced group",
                   poll_and_commit)
        produce(cluster.bootstrap, 0, 300)
        wait_until(lambda: committed_total(cluster.bootstrap) == 300, 60, "300 records committed",
                   poll_and_commit)
        coordinator = cluster.leader_of("__consumer_offsets", partition_for(GROUP, 6))
        cluster.brokers[coordinator].kill9()
        produce(cluster.bootstrap, 300, 300)
        until_committed(cluster.bootstrap, 600, poll_and_commit)
        cluster.brokers[coordinator].restart()
        produce(cluster.bootstrap, 600, 300)
        until_committed(cluster.bootstrap, 900, poll_and_commit)
        assert set().union(*(m.owned for m in members)) == set(range(6))
        processed = {record for member in members for record in member.records}
        assert {(i % 6, i // 6) for i in range(900)} <= processed
    finally:
        for member in members:
            member.consumer.close()
        cluster.stop()
