"""Consumer groups with real clients: sharing partitions, failover, restarts, mixed clients, static members."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.interop

GROUP_SETTINGS = {"group.initial.rebalance.delay.ms": "0"}


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def produce(bootstrap: str, topic: str, count: int, partitions: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
    for i in range(start, start + count):
        producer.produce(topic, key=b"%d" % i, value=b"record-%d" % i, partition=i % partitions)
    assert producer.flush(15) == 0


def wait_until(predicate, timeout: float, what: str, step=None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        if step is not None:
            step()
        else:
            time.sleep(0.05)


def group_consumer(bootstrap: str, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                     **extra})


def test_three_members_share_six_partitions_and_two_groups_each_read_everything(broker_factory):
    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "shared", 6)
    members = [group_consumer(broker.bootstrap, "sharing") for _ in range(3)]
    seen: dict[int, list[tuple[int, int]]] = {i: [] for i in range(3)}
    for member in members:
        member.subscribe(["shared"])

    def poll_all() -> None:
        for i, member in enumerate(members):
            for message in member.consume(100, 0.05):
                if message.error() is None:
                    seen[i].append((message.partition(), message.offset()))

    def balanced() -> bool:
        sizes = [len(member.assignment()) for member in members]
        return sizes == [2, 2, 2]

    wait_until(balanced, 60, "three members with two partitions each", poll_all)
    produce(broker.bootstrap, "shared", 600, 6)
    wait_until(lambda: sum(len(records) for records in seen.values()) >= 600, 60, "600 records", poll_all)
    owned = [sorted(tp.partition for tp in member.assignment()) for member in members]
    assert sorted(p for partitions in owned for p in partitions) == list(range(6))
    for i, partitions in enumerate(owned):
        assert {partition for partition, _ in seen[i]} <= set(partitions)
    for member in members:
        member.close()

    other = group_consumer(broker.bootstrap, "another-group")
    other.subscribe(["shared"])
    records: list[tuple[int, int]] = []
    wait_until(lambda: len(records) >= 600, 60, "the second group to read every record",
               lambda: records.extend((m.partition(), m.offset()) for m in other.consume(100, 0.1)
                                      if m.error() is None))
    other.close()
    assert len(set(records)) == 600
    assert sorted(set(records)) == sorted(set(r for rs in seen.values() for r in rs))


class MemberProcess:
    """A group member in a child process (tests/interop/group_member.py), watched from a thread."""

    def __init__(self, bootstrap: str, topic: str, group: str, instance_id: str | None = None) -> None:
        args = [sys.executable, "-m", "tests.interop.group_member", "--bootstrap", bootstrap, "--topic", topic,
                "--group", group]
        if instance_id:
            args += ["--instance-id", instance_id]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.assignments: list[list[list]] = []
        self.records: list[tuple[int, int]] = []
        self.commits: list[list[list[int]]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            event = json.loads(line)
            if "assigned" in event:
                self.assignments.append(event["assigned"])
            elif "record" in event:
                self.records.append(tuple(event["record"]))
            elif "committed" in event:
                self.commits.append(event["committed"])

    @property
    def assignment(self) -> set[int]:
        return {partition for _, partition in self.assignments[-1]} if self.assignments else set()

    def kill9(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    finally:
        reader.close()
    return {tp.partition: tp.offset for tp in found}


def test_kill9_of_a_member_moves_its_partitions_and_loses_no_record(broker_factory):
    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "failover", 6)
    members = [MemberProcess(broker.bootstrap, "failover", "failover-group") for _ in range(3)]
    try:
        wait_until(lambda: sorted(len(m.assignment) for m in members) == [2, 2, 2], 60, "a balanced group")
        produce(broker.bootstrap, "failover", 300, 6)
        wait_until(lambda: sum(len(m.records) for m in members) >= 300, 60, "the first 300 records")
        history = [committed_offsets(broker.bootstrap, "failover-group", "failover", 6)]

        victim, survivors = members[0], members[1:]
        orphaned = victim.assignment
        victim.kill9()
        killed_at = time.monotonic()
        produce(broker.bootstrap, "failover", 300, 6, start=300)
        wait_until(lambda: set().union(*(m.assignment for m in survivors)) == set(range(6)), 30,
                   "the survivors to own every partition")
        took = time.monotonic() - killed_at
        assert took < 6 + 10, f"partitions of the dead member moved after {took:.1f} s (session timeout 6 s)"
        assert orphaned <= set().union(*(m.assignment for m in survivors))

        def everything_processed() -> bool:
            history.append(committed_offsets(broker.bootstrap, "failover-group", "failover", 6))
            return sum(history[-1].values()) == 600

        wait_until(everything_processed, 60, "every record processed and committed", lambda: time.sleep(0.3))
        processed = {record for member in members for record in member.records}
        expected = {(i % 6, i // 6) for i in range(600)}
        assert expected <= processed, f"{len(expected - processed)} records never processed"
        for partition in range(6):
            offsets = [snapshot.get(partition, -1001) for snapshot in history]
            assert offsets == sorted(offsets), f"committed offsets of partition {partition} went back: {offsets}"
    finally:
        for member in members:
            member.stop()


def test_committed_offsets_and_groups_survive_broker_restarts(broker_factory):
    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "durable", 3)
    produce(broker.bootstrap, "durable", 90, 3)
    consumer = group_consumer(broker.bootstrap, "durable-group")
    consumer.subscribe(["durable"])
    records: list = []
    wait_until(lambda: len(records) >= 90, 60, "90 records",
               lambda: records.extend(m for m in consumer.consume(100, 0.1) if m.error() is None))
    consumer.commit(offsets=[TopicPartition("durable", p, 20 + p) for p in range(3)], asynchronous=False)
    consumer.close()
    expected = {p: 20 + p for p in range(3)}
    assert committed_offsets(broker.bootstrap, "durable-group", "durable", 3) == expected

    broker.stop()
    broker.restart()
    assert committed_offsets(broker.bootstrap, "durable-group", "durable", 3) == expected

    consumer = group_consumer(broker.bootstrap, "durable-group")
    consumer.commit(offsets=[TopicPartition("durable", p, 25 + p) for p in range(3)], asynchronous=False)
    consumer.close()
    broker.kill9()
    broker.restart()
    assert committed_offsets(broker.bootstrap, "durable-group", "durable", 3) == {p: 25 + p for p in range(3)}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert "durable-group" in {group.group_id for group in listed.valid}

    resumed = group_consumer(broker.bootstrap, "durable-group")
    resumed.subscribe(["durable"])
    first: dict[int, int] = {}

    def read() -> None:
        for message in resumed.consume(100, 0.1):
            if message.error() is None:
                first.setdefault(message.partition(), message.offset())

    wait_until(lambda: len(first) == 3, 60, "the resumed member to read every partition", read)
    resumed.close()
    assert first == {p: 25 + p for p in range(3)}


def test_kafka_python_aiokafka_and_librdkafka_share_one_group(broker_factory):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as AioRoundRobin
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "mixed", 6)
    stop = threading.Event()
    owned: dict[str, set[int]] = {"librdkafka": set(), "kafka-python": set(), "aiokafka": set()}
    read: dict[str, set[tuple[int, int]]] = {name: set() for name in owned}
    failures: list[BaseException] = []

    def kafka_python_member() -> None:
        consumer = KafkaConsumer("mixed", bootstrap_servers=broker.bootstrap, group_id="mixed-group",
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 partition_assignment_strategy=[RoundRobinPartitionAssignor],
                                 session_timeout_ms=6000, heartbeat_interval_ms=500)
        try:
            while not stop.is_set():
                for partition, messages in consumer.poll(200).items():
                    read["kafka-python"].update((partition.partition, m.offset) for m in messages)
                owned["kafka-python"] = {tp.partition for tp in consumer.assignment()}
        finally:
            consumer.close()

    def aiokafka_member() -> None:
        async def run() -> None:
            consumer = AIOKafkaConsumer("mixed", bootstrap_servers=broker.bootstrap, group_id="mixed-group",
                                        auto_offset_reset="earliest", enable_auto_commit=False,
                                        partition_assignment_strategy=[AioRoundRobin],
                                        session_timeout_ms=6000, heartbeat_interval_ms=500)
            await consumer.start()
            try:
                while not stop.is_set():
                    batches = await consumer.getmany(timeout_ms=200)
                    for partition, messages in batches.items():
                        read["aiokafka"].update((partition.partition, m.offset) for m in messages)
                    owned["aiokafka"] = {tp.partition for tp in consumer.assignment()}
            finally:
                await consumer.stop()
        asyncio.run(run())

    def guarded(target):
        def run() -> None:
            try:
                target()
            except BaseException as error:  # noqa: BLE001 - reported by the test thread
                failures.append(error)
        return run

    threads = [threading.Thread(target=guarded(kafka_python_member)),
               threading.Thread(target=guarded(aiokafka_member))]
    for thread in threads:
        thread.start()
    consumer = group_consumer(broker.bootstrap, "mixed-group", **{"partition.assignment.strategy": "roundrobin"})
    consumer.subscribe(["mixed"])

    def poll() -> None:
        assert not failures, failures
        for message in consumer.consume(100, 0.1):
            if message.error() is None:
                read["librdkafka"].add((message.partition(), message.offset()))
        owned["librdkafka"] = {tp.partition for tp in consumer.assignment()}

    try:
        wait_until(lambda: sorted(len(p) for p in owned.values()) == [2, 2, 2]
                   and set().union(*owned.values()) == set(range(6)), 90,
                   "three clients with two partitions each", poll)
        produce(broker.bootstrap, "mixed", 600, 6)
        wait_until(lambda: len(set().union(*read.values())) >= 600, 60, "every record read", poll)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        consumer.close()
    assert not failures, failures
    assert set().union(*read.values()) == {(i % 6, i // 6) for i in range(600)}
    for name in owned:
        assert {partition for partition, _ in read[name]} == owned[name], name


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(broker_factory):
    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "static", 4)
    events: dict[str, list[str]] = {"a": [], "b": []}

    def member(name: str) -> Consumer:
        consumer = group_consumer(broker.bootstrap, "static-group", **{"group.instance.id": f"member-{name}",
                                                                       "session.timeout.ms": 30000})
        consumer.subscribe(["static"],
                           on_assign=lambda c, ps: events[name].append("assign:" + ",".join(
                               str(p.partition) for p in sorted(ps, key=lambda p: p.partition))),
                           on_revoke=lambda c, ps: events[name].append("revoke"))
        return consumer

    a, b = member("a"), member("b")

    def poll_both() -> None:
        a.poll(0.05)
        b.poll(0.05)

    wait_until(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 60, "two static members", poll_both)
    before_a = sorted(tp.partition for tp in a.assignment())
    b_events = list(events["b"])
    a.close()  # a static member does not leave the group on close
    events["a"].clear()
    a = member("a")
    wait_until(lambda: len(a.assignment()) == 2, 30, "the restarted static member's assignment", poll_both)
    for _ in range(20):
        poll_both()
    assert sorted(tp.partition for tp in a.assignment()) == before_a
    assert events["b"] == b_events, "the other member saw a rebalance"
    a.close()
    b.close()


def test_deleting_a_topic_drops_its_committed_offsets(broker_factory):
    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "doomed", 2)
    consumer = group_consumer(broker.bootstrap, "doomed-group")
    consumer.commit(offsets=[TopicPartition("doomed", p, 7) for p in range(2)], asynchronous=False)
    consumer.close()
    assert committed_offsets(broker.bootstrap, "doomed-group", "doomed", 2) == {0: 7, 1: 7}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics(["doomed"])["doomed"].result(10)
    create_topic(broker.bootstrap, "doomed", 2)
    assert committed_offsets(broker.bootstrap, "doomed-group", "doomed", 2) == {0: -1001, 1: -1001}


def test_oversized_offset_metadata_is_refused_and_changes_nothing(broker_factory):
    from confluent_kafka import KafkaException

    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "meta", 1)
    consumer = group_consumer(broker.bootstrap, "meta-group")
    consumer.commit(offsets=[TopicPartition("meta", 0, 3, "fits")], asynchronous=False)
    with pytest.raises(KafkaException) as refused:
        consumer.commit(offsets=[TopicPartition("meta", 0, 9, "x" * 4097)], asynchronous=False)
    consumer.close()
    assert "OFFSET_METADATA_TOO_LARGE" in str(refused.value)
    assert committed_offsets(broker.bootstrap, "meta-group", "meta", 1) == {0: 3}


def test_a_member_without_a_common_assignor_is_refused(broker_factory):
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import InconsistentGroupProtocolError

    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "protocols", 2)
    member = group_consumer(broker.bootstrap, "protocol-group", **{"partition.assignment.strategy": "range"})
    member.subscribe(["protocols"])
    wait_until(lambda: len(member.assignment()) == 2, 30, "the range member's assignment",
               lambda: member.poll(0.1))
    stranger = KafkaConsumer("protocols", bootstrap_servers=broker.bootstrap, group_id="protocol-group",
                             partition_assignment_strategy=[RoundRobinPartitionAssignor])
    try:
        with pytest.raises(InconsistentGroupProtocolError):
            for _ in range(50):
                stranger.poll(200)
    finally:
        stranger.close()
    member.poll(0.5)
    assert len(member.assignment()) == 2
    member.close()


def test_a_live_group_is_reloaded_with_its_members_after_a_broker_kill9(broker_factory):
    from confluent_kafka import ConsumerGroupState

    broker = broker_factory(GROUP_SETTINGS)
    create_topic(broker.bootstrap, "reloaded", 2)
    member = MemberProcess(broker.bootstrap, "reloaded", "reloaded-group")
    try:
        wait_until(lambda: len(member.assignment) == 2, 60, "the member's assignment")

        def describe():
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            return admin.describe_consumer_groups(["reloaded-group"])["reloaded-group"].result(10)

        before = describe()
        assert before.state == ConsumerGroupState.STABLE
        broker.kill9()
        broker.restart()
        after = describe()
        assert after.state == ConsumerGroupState.STABLE
        assert [m.member_id for m in after.members] == [m.member_id for m in before.members]
        assert [sorted(tp.partition for tp in m.assignment.topic_partitions) for m in after.members] == [[0, 1]]
        produce(broker.bootstrap, "reloaded", 10, 2)
        wait_until(lambda: len(member.records) >= 10, 60, "the member to go on consuming after the restart")
    finally:
        member.stop()
