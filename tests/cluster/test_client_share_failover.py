"""Gregor's ShareConsumer on three brokers while the broker that coordinates its share group is
killed -9: the members find the new coordinator, go on heartbeating and fetching, and every record
is processed; a record whose acceptance the brokers confirmed is never delivered again."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from gregor.client import ShareConsumer
from gregor.coordinator.partitioning import partition_for
from tests.cluster.brokers import Cluster
from tests.cluster.test_share_failover import SHARE

pytestmark = pytest.mark.slow

GROUP, TOPIC = "share-failover", "jobs"


def produce(bootstrap: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    for i in range(start, start + count):
        producer.produce(TOPIC, value=b"%d" % i, partition=i % 3)
    assert producer.flush(60) == 0


class Worker:
    """Polls, then commits the poll's records (implicit mode: accepted) and keeps what is confirmed."""

    def __init__(self, bootstrap: str) -> None:
        self.consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "max.poll.records": 20})
        self.consumer.subscribe([TOPIC])
        self.received: list[tuple[int, int, int]] = []
        self.confirmed: dict[tuple[int, int], int] = {}
        """(partition, offset) -> the delivery count the brokers confirmed accepting."""

    def step(self) -> None:
        records = [(r.partition, r.offset, r.delivery_count) for r in self.consumer.poll(0.1)]
        if not records:
            return
        self.received.extend(records)
        try:
            outcome = self.consumer.commit_sync(10)
        except Exception:  # a commit racing the failover: its records come back and are processed again
            return
        self.confirmed.update({(p, o): d for p, o, d in records
                               if (TOPIC, p) in outcome and outcome[(TOPIC, p)] is None})


def test_share_consumers_carry_on_when_the_share_coordinator_is_killed(tmp_path):
    cluster = Cluster(tmp_path, brokers=3, overrides={**SHARE, "group.share.session.timeout.ms": "10000"}).start()
    workers: list[Worker] = []
    try:
        cluster.create_topic(TOPIC, 3, 3)
        cluster.wait_for_full_isr(TOPIC)
        workers = [Worker(cluster.bootstrap) for _ in range(2)]

        def processed() -> set[tuple[int, int]]:
            return {(p, o) for worker in workers for p, o, _ in worker.received}

        def until(count: int, timeout: float) -> None:
            deadline = time.monotonic() + timeout
            while len(processed()) < count:
                assert time.monotonic() < deadline, f"{len(processed())} of {count} records processed"
                for worker in workers:
                    worker.step()

        produce(cluster.bootstrap, 0, 60)
        until(60, 60)
        coordinator = cluster.leader_of("__consumer_offsets", partition_for(GROUP, 6))
        cluster.brokers[coordinator].kill9()
        produce(cluster.bootstrap, 60, 60)
        until(120, 90)
        assert processed() == {(i % 3, i // 3) for i in range(120)}
        confirmed = {key: count for worker in workers for key, count in worker.confirmed.items()}
        again = [(p, o, d) for worker in workers for p, o, d in worker.received if d > confirmed.get((p, o), d)]
        assert not again, f"accepted records delivered again: {again}"
        assert confirmed, "no acceptance was confirmed"
    finally:
        for worker in workers:
            worker.consumer.close()
        cluster.stop()
