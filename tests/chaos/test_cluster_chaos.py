"""Chaos against a replicated cluster of real processes (three controllers, three brokers): an
idempotent librdkafka producer with acks=all writes to a replication-factor-3 topic with
min.insync.replicas=2 while brokers and controllers are killed (-9), paused (SIGSTOP) and
restarted at random; a consumer group reads along. Afterwards every acknowledged record is in its
partition exactly once and in order, the replicas' logs agree, and the group has consumed to
the end. The counts are printed. GREGOR_CHAOS_SECONDS sets the length (default 120 s) and
GREGOR_CHAOS_SEED the schedule (printed, so a failing run can be replayed).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.cluster.brokers import Cluster, replica_batches

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(900)]

PARTITIONS = 3
TOPIC = "chaos"


class Stream:
    """The producer thread: value n goes to partition n % 3; acknowledged values are recorded."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": 300000, "retry.backoff.ms": 100})
        self.acknowledged: list[int] = []
        self.failed: list[str] = []
        self.sent = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acknowledged.append(int(message.value()))
        else:
            self.failed.append(str(error))

    def _run(self) -> None:
        while not self.stopping.is_set():
            if self.sent - len(self.acknowledged) - len(self.failed) > 2000:
                self.producer.poll(0.05)
                continue
            self.producer.produce(TOPIC, str(self.sent).encode(), partition=self.sent % PARTITIONS,
                                  on_delivery=self._delivered)
            self.sent += 1
            self.producer.poll(0)
            if self.sent % 100 == 0:
                time.sleep(0.02)
        assert self.producer.flush(240) == 0, "records still unacknowledged after the cluster healed"


class GroupReader:
    """A consumer group member reading along through the chaos, committing as it goes."""

    def __init__(self, bootstrap: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-readers",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": True,
                                  "auto.commit.interval.ms": 500, "session.timeout.ms": 6000,
                                  "statistics.interval.ms": 1000, "stats_cb": self._statistics})
        self.partition_states: dict[int, dict] = {}
        self.read = 0
        self.next_offsets: dict[int, int] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _statistics(self, report: str) -> None:
        """librdkafka's view of each partition, named when the group stalls."""
        partitions = json.loads(report).get("topics", {}).get(TOPIC, {}).get("partitions", {})
        self.partition_states = {int(p): {key: state.get(key) for key in (
            "fetch_state", "leader", "next_offset", "app_offset", "committed_offset", "hi_offset", "fetchq_cnt")}
            for p, state in partitions.items() if int(p) >= 0}

    def _run(self) -> None:
        self.consumer.subscribe([TOPIC])
        while not self.stopping.is_set():
            message = self.consumer.poll(0.2)
            if message is not None and not message.error():
                self.read += 1
                self.next_offsets[message.partition()] = message.offset() + 1
        self.consumer.commit(offsets=[TopicPartition(TOPIC, partition, offset)
                                      for partition, offset in sorted(self.next_offsets.items())], asynchronous=False)
        self.consumer.close()


def test_no_acknowledged_record_is_lost_or_duplicated_under_chaos(tmp_path):
    seconds = float(os.environ.get("GREGOR_CHAOS_SECONDS", "120"))
    seed = int(os.environ.get("GREGOR_CHAOS_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    print(f"\nchaos: seed {seed} (GREGOR_CHAOS_SEED={seed}), {seconds:.0f} s")
    cluster = Cluster(tmp_path, brokers=3, controllers=3, overrides={"min.insync.replicas": "2"}).start()
    events = {"broker kill -9": 0, "broker SIGSTOP": 0, "controller kill -9": 0, "restarts": 0}
    stream = reader = None
    try:
        cluster.create_topic(TOPIC, PARTITIONS)
        stream, reader = Stream(cluster.bootstrap), GroupReader(cluster.bootstrap)
        stream.thread.start()
        reader.thread.start()
        deadline = time.monotonic() + seconds
        down: list = []
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(2, 5))
            for node in down:
                node.restart()
                events["restarts"] += 1
            down = []
            action = rng.choice(["broker kill -9", "broker kill -9", "broker SIGSTOP", "controller kill -9", "rest"])
            if action == "broker kill -9":
                node = cluster.brokers[rng.choice(sorted(cluster.brokers))]
                node.kill9()
                down.append(node)
            elif action == "broker SIGSTOP":
                node = cluster.brokers[rng.choice(sorted(cluster.brokers))]
                node.pause()
                time.sleep(rng.uniform(1, 4))
                node.resume()
            elif action == "controller kill -9":
                node = rng.choice(cluster.controllers)
                node.kill9()
                down.append(node)
            if action in events:
                events[action] += 1
            print(f"chaos: {action}; {len(stream.acknowledged)} acknowledged, {reader.read} read by the group",
                  flush=True)
        for node in down:
            node.restart()
            events["restarts"] += 1
        cluster.wait_for_full_isr(TOPIC, timeout=120)
        stream.stopping.set()
        stream.thread.join(300)
        assert not stream.thread.is_alive() and not stream.failed, stream.failed[:5]
        acknowledged = stream.acknowledged
        ends = _end_offsets(cluster.bootstrap)
        _wait_until_the_group_is_at(reader, ends)
        reader.stopping.set()
        reader.thread.join(60)
        assert _committed(cluster.bootstrap) == ends, "the group's commits stop short of the end"
        by_partition = _read_everything(cluster.bootstrap, ends)
        for partition, values in by_partition.items():
            assert values == sorted(values), f"partition {partition} out of order"
            assert len(values) == len(set(values)), f"partition {partition} has duplicates"
            assert all(value % PARTITIONS == partition for value in values)
        stored = {value for values in by_partition.values() for value in values}
        lost = set(acknowledged) - stored
        print(f"chaos: {events}; sent {stream.sent}, acknowledged {len(acknowledged)}, stored "
              f"{len(stored)}, lost {len(lost)}, duplicates 0, group read {reader.read}")
        assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:10]}"
        assert len(acknowledged) > 1000
    finally:
        if stream is not None:
            stream.stopping.set()
        if reader is not None:
            reader.stopping.set()
        cluster.stop()
    for partition in range(PARTITIONS):
        logs = [replica_batches(node, TOPIC, partition) for node in cluster.brokers.values()]
        assert logs[0] == logs[1] == logs[2], f"replicas of partition {partition} diverge"


def _end_offsets(bootstrap: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-ends"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1] for p in range(PARTITIONS)}
    finally:
        consumer.close()


def _wait_until_the_group_is_at(reader: GroupReader, ends: dict[int, int], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(reader.next_offsets.get(p, 0) >= ends[p] for p in range(PARTITIONS)):
            return
        time.sleep(0.5)
    raise AssertionError(f"the group did not finish consuming: at {reader.next_offsets}, ends {ends}; "
                         f"librdkafka's partition states: {reader.partition_states}")


def _committed(bootstrap: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-readers"})
    try:
        return {found.partition: found.offset for found in consumer.committed(
            [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)}
    finally:
        consumer.close()


def _read_everything(bootstrap: str, ends: dict[int, int]) -> dict[int, list[int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-verify", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    by_partition: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 120
    try:
        while any(len(by_partition[p]) < ends[p] for p in range(PARTITIONS)) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                by_partition[message.partition()].append(int(message.value()))
    finally:
        consumer.close()
    return by_partition
