"""KIP-848 consumer groups with librdkafka in `group.protocol=consumer`: the broker assigns.

Members here are confluent-kafka consumers (librdkafka 2.16) speaking ConsumerGroupHeartbeat;
assignments are incremental (on_assign gives the partitions added, on_revoke those taken away).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.interop.test_groups import create_topic, produce, wait_until

pytestmark = pytest.mark.interop

SETTINGS = {"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
            "group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000"}


def consumer(bootstrap: str, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, **extra})


class Member:
    """A consumer in this process that keeps its whole assignment from incremental callbacks."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = consumer(bootstrap, group)
        self.owned: set[int] = set()
        self.revoked: list[int] = []
        self.records: list[tuple[int, int]] = []
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, _consumer, partitions) -> None:
        self.owned |= {p.partition for p in partitions}

    def _revoked(self, _consumer, partitions) -> None:
        self.revoked.extend(p.partition for p in partitions)
        self.owned -= {p.partition for p in partitions}

    def poll(self) -> None:
        for message in self.consumer.consume(100, 0.05):
            if message.error() is None:
                self.records.append((message.partition(), message.offset()))


class MemberProcess:
    """tests/interop/group_member.py as a KIP-848 member, in a process of its own (to kill -9)."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.interop.group_member", "--bootstrap", bootstrap, "--topic", topic,
             "--group", group, "--group-protocol", "consumer"], stdout=subprocess.PIPE, text=True)
        self.owned: set[int] = set()
        self.revoked: list[int] = []
        self.records: list[tuple[int, int]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            if "assigned" in event:
                self.owned |= {partition for _, partition in event["assigned"]}
            elif "revoked" in event:
                self.revoked.extend(partition for _, partition in event["revoked"])
                self.owned -= {partition for _, partition in event["revoked"]}
            elif "record" in event:
                self.records.append(tuple(event["record"]))

    def kill9(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    finally:
        reader.close()
    return {tp.partition: tp.offset for tp in found}


def test_three_members_split_six_partitions_and_the_group_is_described(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "split", 6)
    members = [Member(broker.bootstrap, "splitters", "split") for _ in range(3)]

    def poll_all() -> None:
        for member in members:
            member.poll()

    wait_until(lambda: sorted(len(m.owned) for m in members) == [2, 2, 2], 60, "two partitions each", poll_all)
    assert set().union(*(m.owned for m in members)) == set(range(6))
    produce(broker.bootstrap, "split", 600, 6)
    wait_until(lambda: sum(len(m.records) for m in members) >= 600, 60, "600 records", poll_all)
    for member in members:
        assert {partition for partition, _ in member.records} <= member.owned
    assert sorted(record for m in members for record in m.records) == sorted((i % 6, i // 6) for i in range(600))

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(10)
    (group,) = [g for g in listed.valid if g.group_id == "splitters"]
    assert group.type.name == "CONSUMER"
    described = admin.describe_consumer_groups(["splitters"])["splitters"].result(10)
    assert described.type.name == "CONSUMER" and described.state.name == "STABLE"
    assert sorted(tp.partition for m in described.members for tp in m.assignment.topic_partitions) == list(range(6))

    members[0].consumer.close()  # leaves with epoch -1: its partitions are free at once, no session to wait out
    survivors = members[1:]

    def poll_survivors() -> None:
        for member in survivors:
            member.poll()

    wait_until(lambda: sorted(len(m.owned) for m in survivors) == [3, 3], 5, "the two others to take over",
               poll_survivors)
    for member in survivors:
        member.consumer.close()


@pytest.mark.slow
def test_a_killed_member_hands_its_partitions_over_while_the_others_go_on(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "handover", 6)
    members = [MemberProcess(broker.bootstrap, "handover", "handover-group") for _ in range(3)]
    try:
        wait_until(lambda: sorted(len(m.owned) for m in members) == [2, 2, 2], 60, "a balanced group")
        victim, survivors = members[0], members[1:]
        kept = [set(m.owned) for m in survivors]
        for member in survivors:
            member.revoked.clear()  # the revocations that balanced the group
        produce(broker.bootstrap, "handover", 300, 6)
        wait_until(lambda: sum(len(m.records) for m in members) >= 300, 60, "the first 300 records")
        victim.kill9()
        counts = [len(m.records) for m in survivors]
        produce(broker.bootstrap, "handover", 300, 6, start=300)
        # Before the victim's session (6 s) ends, the survivors go on reading their own partitions.
        wait_until(lambda: all(len(m.records) > c for m, c in zip(survivors, counts, strict=True)), 5,
                   "the survivors to go on consuming")
        wait_until(lambda: set().union(*(m.owned for m in survivors)) == set(range(6)), 30,
                   "the survivors to own every partition")
        for member, before in zip(survivors, kept, strict=True):
            assert before <= member.owned and not member.revoked, "a survivor lost a partition it had"

        def everything_committed() -> bool:
            return sum(committed(broker.bootstrap, "handover-group", "handover", 6).values()) == 600

        wait_until(everything_committed, 60, "every record processed and committed", lambda: time.sleep(0.3))
        processed = {record for member in members for record in member.records}
        assert {(i % 6, i // 6) for i in range(600)} <= processed
    finally:
        for member in members:
            member.stop()


def test_committed_offsets_and_the_group_survive_a_broker_restart(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "kept", 3)
    produce(broker.bootstrap, "kept", 90, 3)
    member = Member(broker.bootstrap, "keepers", "kept")
    wait_until(lambda: len(member.records) >= 90, 60, "90 records", member.poll)
    member.consumer.commit(offsets=[TopicPartition("kept", p, 20 + p) for p in range(3)], asynchronous=False)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    before = admin.describe_consumer_groups(["keepers"])["keepers"].result(10)

    broker.kill9()
    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    after = admin.describe_consumer_groups(["keepers"])["keepers"].result(10)
    assert after.type.name == "CONSUMER"
    assert [m.member_id for m in after.members] == [m.member_id for m in before.members]
    assert committed(broker.bootstrap, "keepers", "kept", 3) == {p: 20 + p for p in range(3)}
    member.consumer.close()

    resumed = Member(broker.bootstrap, "keepers", "kept")
    wait_until(lambda: {p for p, _ in resumed.records} == {0, 1, 2}, 60, "the resumed member to read", resumed.poll)
    first = {}
    for partition, offset in resumed.records:
        first.setdefault(partition, offset)
    assert first == {p: 20 + p for p in range(3)}
    resumed.consumer.close()


def test_a_regex_subscription_follows_new_topics_and_partitions(broker_factory):
    broker = broker_factory(SETTINGS)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("pat-a", 2, 1), NewTopic("other", 1, 1)]).values():
        future.result(10)
    member = consumer(broker.bootstrap, "patterned")
    member.subscribe(["^pat-.*"])

    def owns(*expected: tuple[str, int]) -> bool:
        member.consume(10, 0.05)
        return sorted((tp.topic, tp.partition) for tp in member.assignment()) == sorted(expected)

    wait_until(lambda: owns(("pat-a", 0), ("pat-a", 1)), 30, "the topics the pattern matches")
    admin.create_topics([NewTopic("pat-b", 1, 1)])["pat-b"].result(10)
    wait_until(lambda: owns(("pat-a", 0), ("pat-a", 1), ("pat-b", 0)), 30, "the new matching topic")
    admin.create_partitions([NewPartitions("pat-a", 3)])["pat-a"].result(10)
    wait_until(lambda: owns(("pat-a", 0), ("pat-a", 1), ("pat-a", 2), ("pat-b", 0)), 30, "the new partition")
    member.close()


def test_a_static_member_that_comes_back_gets_its_partitions_while_the_other_keeps_its_own(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "static", 4)

    def member(instance: str) -> Consumer:
        created = consumer(broker.bootstrap, "statics", **{"group.instance.id": instance})
        created.subscribe(["static"])
        return created

    first, second = member("first"), member("second")

    def owned(*members: Consumer) -> list[list[int]]:
        for each in members:
            each.consume(10, 0.05)
        return [sorted(tp.partition for tp in each.assignment()) for each in members]

    wait_until(lambda: [len(p) for p in owned(first, second)] == [2, 2], 30, "two partitions each")
    before = owned(first, second)
    first.close()  # a static member leaves with epoch -2: its partitions wait for it
    away_until = time.monotonic() + 1.5  # three heartbeat intervals
    while time.monotonic() < away_until:
        assert owned(second) == [before[1]], "the other member was given the absent one's partitions"
    first = member("first")
    wait_until(lambda: owned(first, second) == before, 30, "the same partitions as before")
    for each in (first, second):
        each.close()


def test_classic_and_consumer_protocol_members_share_a_group_online(broker_factory):
    """Online upgrade and downgrade with live members: a consumer-protocol member joins a classic
    librdkafka consumer's group (the group becomes a consumer group, the classic member stays and
    gives up half), then leaves (the group becomes classic again and its member takes everything)."""
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "mixed", 4)
    produce(broker.bootstrap, "mixed", 40, 4)
    classic = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "mixed", "auto.offset.reset": "earliest",
                        "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    classic.subscribe(["mixed"])
    classic_records: list[tuple[int, int]] = []

    def poll_classic() -> None:
        for message in classic.consume(10, 0.05):
            if message.error() is None:
                classic_records.append((message.partition(), message.offset()))

    wait_until(lambda: len(classic.assignment()) == 4, 30, "the classic member's partitions", poll_classic)
    modern = Member(broker.bootstrap, "mixed", "mixed")

    def poll_both() -> None:
        poll_classic()
        modern.poll()

    wait_until(lambda: (len(classic.assignment()), len(modern.owned)) == (2, 2), 60, "two partitions each", poll_both)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    described = admin.describe_consumer_groups(["mixed"])["mixed"].result(10)
    assert described.type.name == "CONSUMER" and len(described.members) == 2
    produce(broker.bootstrap, "mixed", 40, 4, start=40)
    wait_until(lambda: len({record for record in classic_records + modern.records}) >= 80, 60, "every record",
               poll_both)
    # Nothing was committed yet, so a partition moving may be read again; none may be missed.
    assert {(i % 4, i // 4) for i in range(80)} <= set(classic_records) | set(modern.records)
    mine = {tp.partition for tp in classic.assignment()}
    classic.commit(offsets=[TopicPartition("mixed", p, 20) for p in mine], asynchronous=False)  # its generation
    modern.consumer.commit(offsets=[TopicPartition("mixed", p, 20) for p in modern.owned], asynchronous=False)
    assert committed(broker.bootstrap, "mixed", "mixed", 4) == {p: 20 for p in range(4)}

    modern.consumer.close()
    wait_until(lambda: len(classic.assignment()) == 4, 60, "the classic member to get everything back", poll_classic)
    listed = admin.list_consumer_groups().result(10)
    (group,) = [g for g in listed.valid if g.group_id == "mixed"]
    assert group.type.name == "CLASSIC"
    classic.close()
