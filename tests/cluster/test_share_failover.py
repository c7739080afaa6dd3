"""Share state across a failover: the leader of a share group's partition is killed with -9,
and its new leader carries on from the persisted state (accepted records stay done, released
ones come back with their delivery count), read from `__share_group_state` through the leader
of the state partition. Three partitions, led by three brokers, spread the state over leaders
other than the partitions' own, so Read/WriteShareGroupState between brokers are exercised."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from tests.cluster.brokers import Cluster
from tests.share_close import close_share_consumer

pytestmark = pytest.mark.slow

SHARE = {"share.auto.offset.reset": "earliest", "group.share.heartbeat.interval.ms": "500",
         "group.share.record.lock.duration.ms": "3000", "share.coordinator.state.topic.num.partitions": "3",
         "share.coordinator.state.topic.replication.factor": "3"}


def poll_until(consumer: ShareConsumer, done, timeout: float, on_message=None) -> list:
    received = []
    deadline = time.monotonic() + timeout
    while not done(received):
        assert time.monotonic() < deadline, [(m.offset(), m.delivery_count()) for m in received]
        for message in consumer.poll(0.2):
            if message.error() is None:
                received.append(message)
                if on_message is not None:
                    on_message(message)
    return received


def test_share_state_survives_the_partition_leader_killed(tmp_path):
    cluster = Cluster(tmp_path, brokers=3, overrides=SHARE).start()
    try:
        cluster.create_topic("jobs", 3, 3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(15):
            producer.produce("jobs", value=b"job-%d" % i, partition=i % 3)
        assert producer.flush(20) == 0
        first = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": "crew",
                               "share.acknowledgement.mode": "explicit"})
        first.subscribe(["jobs"])
        try:
            got = poll_until(first, lambda got: len({(m.partition(), m.offset()) for m in got}) >= 15, 60,
                             lambda m: first.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() < 2
                                                         else AcknowledgeType.RELEASE))
            first.commit_sync()
            assert {(m.partition(), m.offset()) for m in got} == {(p, o) for p in range(3) for o in range(5)}
        finally:
            close_share_consumer(first)
        cluster.wait_for_full_isr("__share_group_state")
        leader = cluster.leader_of("jobs", 0)
        cluster.brokers[leader].kill9()
        cluster.wait_for("jobs", lambda s: s.get(0, (-1,))[0] not in (-1, leader))
        second = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": "crew"})
        second.subscribe(["jobs"])
        try:
            released = {(p, o) for p in range(3) for o in range(2, 5)}
            again = poll_until(second, lambda got: {(m.partition(), m.offset()) for m in got} >= released, 60)
            for _ in range(10):
                again.extend(second.poll(0.2))
        finally:
            close_share_consumer(second)
        assert sorted((m.partition(), m.offset(), m.delivery_count()) for m in again) == sorted(
            (p, o, 2) for p, o in released)
    finally:
        cluster.stop()
