"""Gregor's Consumer with real processes and peers: kcat writes what it reads, it shares a group
with a librdkafka consumer, and the seeds' delivery semantics hold when a member is killed -9
(at-most-once: commit before processing; at-least-once: commit after processing)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewTopic

from gregor.client.consumer import Consumer

pytestmark = pytest.mark.interop
MEMBER = str(Path(__file__).with_name("gregor_member.py"))


def create_topic(bootstrap: str, partitions: int) -> str:
    name = f"gc-{uuid.uuid4().hex[:8]}"
    admin = ConfluentAdmin({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
    return name


def produce(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    producer = ConfluentProducer({"bootstrap.servers": bootstrap})
    for index in range(count):
        producer.produce(topic, value=b"%d" % index, partition=index % partitions)
    assert producer.flush(20) == 0


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (scripts/setup.sh installs it)")
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_records_written_by_kcat_are_read(broker, codec):
    topic = create_topic(broker.bootstrap, 1)
    lines = "".join(f"key-{index}:value-{index}\n" for index in range(50))
    subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-K:", "-z", codec,
                    "-H", "source=kcat"], input=lines.encode(), check=True, timeout=30)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap}, auto_offset_reset="earliest")
    try:
        consumer.assign([(topic, 0)])
        records = []
        deadline = time.monotonic() + 20
        while len(records) < 50 and time.monotonic() < deadline:
            records.extend(consumer.poll(0.5))
    finally:
        consumer.close()
    assert [(r.key, r.value, r.headers) for r in records] == [
        (b"key-%d" % i, b"value-%d" % i, [("source", b"kcat")]) for i in range(50)]


@pytest.mark.slow
def test_a_gregor_and_a_librdkafka_consumer_share_one_group(broker):
    topic = create_topic(broker.bootstrap, 4)
    group = f"mixed-{uuid.uuid4().hex[:6]}"
    ours = Consumer({"bootstrap.servers": broker.bootstrap}, group_id=group, auto_offset_reset="earliest",
                    partition_assignment_strategy=["range"], session_timeout_ms=6000)
    theirs = ConfluentConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                                "auto.offset.reset": "earliest", "partition.assignment.strategy": "range",
                                "session.timeout.ms": 6000})
    ours.subscribe([topic])
    theirs.subscribe([topic])
    seen: dict[str, set] = {"gregor": set(), "librdkafka": set()}
    assigned: dict[str, set] = {"gregor": set(), "librdkafka": set()}
    stop = threading.Event()

    def librdkafka_loop() -> None:
        while not stop.is_set():
            message = theirs.poll(0.2)
            assigned["librdkafka"] = {partition.partition for partition in theirs.assignment()}
            if message is not None and message.error() is None:
                seen["librdkafka"].add((message.partition(), message.offset()))

    thread = threading.Thread(target=librdkafka_loop)
    thread.start()
    produced = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(seen["gregor"] | seen["librdkafka"]) < 400:
            for record in ours.poll(0.2):
                seen["gregor"].add((record.partition, record.offset))
            assigned["gregor"] = {partition.partition for partition in ours.assignment()}
            if not produced and len(assigned["gregor"]) == 2 and len(assigned["librdkafka"]) == 2:
                produce(broker.bootstrap, topic, 400, partitions=4)
                produced = True
    finally:
        stop.set()
        thread.join()
        ours.close()
        theirs.close()
    assert produced, f"the group never split the partitions: {assigned}"
    assert assigned["gregor"] | assigned["librdkafka"] == {0, 1, 2, 3}
    assert {partition for partition, _ in seen["gregor"]} == assigned["gregor"]
    assert {partition for partition, _ in seen["librdkafka"]} == assigned["librdkafka"]
    assert len(seen["gregor"]) + len(seen["librdkafka"]) == 400


def run_member(broker, topic: str, group: str, order: str, *, die_after_polls: int = 0,
               stop_after: int = 0) -> list[dict]:
    process = subprocess.run(
        [sys.executable, MEMBER, "--bootstrap", broker.bootstrap, "--topic", topic, "--group", group,
         "--order", order, "--die-after-polls", str(die_after_polls), "--stop-after", str(stop_after)],
        capture_output=True, timeout=120)
    if die_after_polls:
        assert process.returncode == -9, process.stderr.decode()[-2000:]
    else:
        assert process.returncode == 0, process.stderr.decode()[-2000:]
    return [json.loads(line) for line in process.stdout.decode().splitlines()]


@pytest.mark.slow
def test_at_most_once_commit_before_processing_loses_the_batch_of_a_crash_and_never_duplicates(broker):
    topic = create_topic(broker.bootstrap, 1)
    group = f"amo-{uuid.uuid4().hex[:6]}"
    produce(broker.bootstrap, topic, 50)
    crashed = run_member(broker, topic, group, "commit-first", die_after_polls=3)
    first = [event["processed"][1] for event in crashed if "processed" in event]
    last_commit = [event["committed"]["0"] for event in crashed if "committed" in event][-1]
    assert first == list(range(len(first))) and last_commit > len(first)
    rest = run_member(broker, topic, group, "commit-first", stop_after=50 - last_commit)
    second = [event["processed"][1] for event in rest if "processed" in event]
    assert second == list(range(last_commit, 50))
    lost = set(range(50)) - set(first) - set(second)
    assert lost == set(range(len(first), last_commit))
    assert not set(first) & set(second)


@pytest.mark.slow
def test_at_least_once_commit_after_processing_redelivers_the_batch_of_a_crash(broker):
    topic = create_topic(broker.bootstrap, 1)
    group = f"alo-{uuid.uuid4().hex[:6]}"
    produce(broker.bootstrap, topic, 50)
    crashed = run_member(broker, topic, group, "process-first", die_after_polls=3)
    first = [event["processed"][1] for event in crashed if "processed" in event]
    commits = [event["committed"]["0"] for event in crashed if "committed" in event]
    assert first == list(range(len(first))) and commits[-1] < len(first)
    rest = run_member(broker, topic, group, "process-first", stop_after=50 - commits[-1])
    second = [event["processed"][1] for event in rest if "processed" in event]
    later_commits = [event["committed"]["0"] for event in rest if "committed" in event]
    assert second == list(range(commits[-1], 50))
    assert set(first) | set(second) == set(range(50))
    assert set(first) & set(second) == set(range(commits[-1], len(first)))
    all_commits = commits + later_commits
    assert all_commits == sorted(all_commits)
