"""Gregor's Consumer (sync and asyncio) with `group.protocol=consumer` (KIP-848) against a Gregor
broker: the broker assigns, members reconcile (revoke, then assign) and acknowledge with their
heartbeats; a closed member leaves with epoch -1, a killed one is fenced when its session ends;
Gregor members and librdkafka members share one group."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time

import pytest

from gregor import aio
from gregor.client import Consumer, ConsumerRebalanceListener, KafkaException
from gregor.client.config import ConfigError
from tests.interop.test_consumer_protocol import SETTINGS, Member
from tests.interop.test_groups import create_topic, produce, wait_until

pytestmark = pytest.mark.interop


def gregor_consumer(bootstrap: str, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, **extra})


class Listener(ConsumerRebalanceListener):
    """Keeps the member's whole assignment from the incremental callbacks."""

    def __init__(self) -> None:
        self.owned: set[tuple[str, int]] = set()
        self.revoked: list[tuple[str, int]] = []
        self.lost: list[tuple[str, int]] = []

    def on_partitions_assigned(self, partitions) -> None:
        self.owned |= {(p.topic, p.partition) for p in partitions}

    def on_partitions_revoked(self, partitions) -> None:
        self.revoked.extend((p.topic, p.partition) for p in partitions)
        self.owned -= {(p.topic, p.partition) for p in partitions}

    def on_partitions_lost(self, partitions) -> None:
        self.lost.extend((p.topic, p.partition) for p in partitions)
        self.owned -= {(p.topic, p.partition) for p in partitions}


class GregorMember:
    def __init__(self, bootstrap: str, group: str, topics, **extra) -> None:
        self.consumer = gregor_consumer(bootstrap, group, **{key.replace("_", "."): value
                                                             for key, value in extra.items()})
        self.listener = Listener()
        self.records: list[tuple[int, int]] = []
        self.consumer.subscribe(topics, listener=self.listener)

    @property
    def owned(self) -> set[int]:
        return {partition for _, partition in self.listener.owned}

    def poll(self) -> None:
        self.records.extend((r.partition, r.offset) for r in self.consumer.poll(0.05))


def test_classic_only_keys_are_refused_and_the_assignor_is_checked(broker_factory):
    with pytest.raises(ConfigError, match="session.timeout.ms"):
        Consumer(bootstrap_servers="127.0.0.1:9", group_id="g", group_protocol="consumer", session_timeout_ms=6000)
    with pytest.raises(ConfigError, match="partition.assignment.strategy"):
        Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "group.protocol": "consumer",
                  "partition.assignment.strategy": "range"})
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "assignors", 1)
    consumer = gregor_consumer(broker.bootstrap, "bad-assignor", **{"group.remote.assignor": "nope"})
    try:
        consumer.subscribe(["assignors"])
        with pytest.raises(KafkaException) as refused:
            wait_until(lambda: consumer.poll(0.1) is None, 20, "an error")
        assert refused.value.name == "UNSUPPORTED_ASSIGNOR"
    finally:
        consumer.close()


@pytest.mark.slow
def test_three_members_split_six_partitions_and_one_closed_hands_over(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "split", 6)
    members = [GregorMember(broker.bootstrap, "splitters", ["split"], **{"group.remote.assignor": "uniform"})
               for _ in range(3)]

    def poll_all() -> None:
        for member in members:
            member.poll()

    wait_until(lambda: sorted(len(m.owned) for m in members) == [2, 2, 2], 60, "two partitions each", poll_all)
    assert set().union(*(m.owned for m in members)) == set(range(6))
    produce(broker.bootstrap, "split", 600, 6)
    wait_until(lambda: sum(len(m.records) for m in members) >= 600, 60, "600 records", poll_all)
    for member in members:
        assert {partition for partition, _ in member.records} <= member.owned
        member.consumer.commit()
    assert sorted(r for m in members for r in m.records) == sorted((i % 6, i // 6) for i in range(600))

    for member in members:
        member.listener.revoked.clear()
    members[0].consumer.close()  # leaves with epoch -1: no session to wait out
    survivors = members[1:]
    kept = [set(m.owned) for m in survivors]
    produce(broker.bootstrap, "split", 60, 6, start=600)

    def poll_survivors() -> None:
        for member in survivors:
            member.poll()

    wait_until(lambda: sorted(len(m.owned) for m in survivors) == [3, 3], 10, "the two others to take over",
               poll_survivors)
    for member, before in zip(survivors, kept, strict=True):
        assert before <= member.owned and not member.listener.revoked, "a survivor gave up a partition"
    wait_until(lambda: sum(len(m.records) for m in members) >= 660, 30, "the last 60 records", poll_survivors)
    # The closed member's committed offsets are where the others started: nothing read twice.
    assert sorted(r for m in members for r in m.records) == sorted((i % 6, i // 6) for i in range(660))
    for member in survivors:
        member.consumer.close()


@pytest.mark.slow
def test_a_regex_subscription_is_matched_by_the_broker(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "rx-a", 2)
    create_topic(broker.bootstrap, "other", 1)
    member = GregorMember(broker.bootstrap, "regexers", "^rx-.*")
    wait_until(lambda: member.listener.owned == {("rx-a", 0), ("rx-a", 1)}, 30, "rx-a", member.poll)
    create_topic(broker.bootstrap, "rx-b", 1)
    wait_until(lambda: ("rx-b", 0) in member.listener.owned, 30, "the new topic rx-b", member.poll)
    assert not any(topic == "other" for topic, _ in member.listener.owned)
    member.consumer.close()


@pytest.mark.slow
def test_gregor_and_librdkafka_members_share_a_group(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "mixed", 6)
    gregor = [GregorMember(broker.bootstrap, "mixers", ["mixed"]) for _ in range(2)]
    confluent = Member(broker.bootstrap, "mixers", "mixed")

    def poll_all() -> None:
        for member in gregor:
            member.poll()
        confluent.poll()

    everyone = [*gregor, confluent]
    wait_until(lambda: sorted(len(m.owned) for m in everyone) == [2, 2, 2], 60, "two partitions each", poll_all)
    assert set().union(*(m.owned for m in everyone)) == set(range(6))
    produce(broker.bootstrap, "mixed", 300, 6)
    wait_until(lambda: sum(len(m.records) for m in everyone) >= 300, 60, "300 records", poll_all)
    assert sorted(r for m in everyone for r in m.records) == sorted((i % 6, i // 6) for i in range(300))
    confluent.consumer.close()
    wait_until(lambda: sorted(len(m.owned) for m in gregor) == [3, 3], 20, "the Gregor members to take over",
               lambda: [m.poll() for m in gregor])
    for member in gregor:
        member.consumer.close()


@pytest.mark.slow
def test_a_member_that_stops_polling_leaves_and_its_next_poll_rejoins(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "idle", 2)
    idle = GregorMember(broker.bootstrap, "idlers", ["idle"], max_poll_interval_ms=1500)
    busy = GregorMember(broker.bootstrap, "idlers", ["idle"])

    def poll_both() -> None:
        idle.poll()
        busy.poll()

    wait_until(lambda: (len(idle.owned), len(busy.owned)) == (1, 1), 30, "one partition each", poll_both)
    wait_until(lambda: len(busy.owned) == 2, 20, "the idle member's partition to move", busy.poll)
    idle.poll()  # reports the partition lost and rejoins
    assert len(idle.listener.lost) == 1 and not idle.owned
    wait_until(lambda: (len(idle.owned), len(busy.owned)) == (1, 1), 30, "the rejoined member's share", poll_both)
    for member in (idle, busy):
        member.consumer.close()


MEMBER_SCRIPT = """
import json, sys
from gregor.client import Consumer, ConsumerRebalanceListener

class Listener(ConsumerRebalanceListener):
    def on_partitions_assigned(self, partitions):
        print(json.dumps({"assigned": [p.partition for p in partitions]}), flush=True)

consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
                     "auto.offset.reset": "earliest"})
consumer.subscribe([sys.argv[3]], listener=Listener())
while True:
    consumer.poll(0.2)
"""


@pytest.mark.slow
def test_a_killed_member_is_fenced_after_its_session_and_the_others_go_on(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "fenced", 6)
    victim = subprocess.Popen([sys.executable, "-c", MEMBER_SCRIPT, broker.bootstrap, "fencers", "fenced"],
                              stdout=subprocess.PIPE, text=True)
    victim_owned: set[int] = set()

    def read_victim() -> None:
        assert victim.stdout is not None
        for line in victim.stdout:
            victim_owned.update(json.loads(line)["assigned"])

    threading.Thread(target=read_victim, daemon=True).start()
    try:
        survivors = [GregorMember(broker.bootstrap, "fencers", ["fenced"]) for _ in range(2)]

        def poll_survivors() -> None:
            for member in survivors:
                member.poll()

        wait_until(lambda: sorted(len(m.owned) for m in survivors) == [2, 2] and len(victim_owned) >= 2, 60,
                   "a balanced group", poll_survivors)
        victim.kill()
        victim.wait()
        killed_at = time.monotonic()
        counts = [len(m.records) for m in survivors]
        produce(broker.bootstrap, "fenced", 120, 6)
        wait_until(lambda: all(len(m.records) > c for m, c in zip(survivors, counts, strict=True)), 5,
                   "the survivors to go on before the session ends", poll_survivors)
        wait_until(lambda: sorted(len(m.owned) for m in survivors) == [3, 3], 30, "the victim's partitions to move",
                   poll_survivors)
        assert time.monotonic() - killed_at > 3, "moved before the victim's session (6 s) could end"
        wait_until(lambda: sum(len(m.records) for m in survivors) >= 120, 30, "every record", poll_survivors)
        for member in survivors:
            member.consumer.close()
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()


@pytest.mark.slow
def test_the_asyncio_consumer_joins_reconciles_and_leaves(broker_factory):
    broker = broker_factory(SETTINGS)
    create_topic(broker.bootstrap, "aio-split", 4)
    produce(broker.bootstrap, "aio-split", 200, 4)

    async def scenario() -> None:
        listeners = [Listener(), Listener()]
        consumers = [aio.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "aio-group",
                                   "group.protocol": "consumer", "auto.offset.reset": "earliest"})
                     for _ in listeners]
        records: list[list[tuple[int, int]]] = [[], []]
        for consumer, listener in zip(consumers, listeners, strict=True):
            await consumer.start()
            consumer.subscribe(["aio-split"], listener=listener)

        async def poll_all(which) -> None:
            for index in which:
                got = await consumers[index].poll(0.05)
                records[index].extend((r.partition, r.offset) for r in got)

        deadline = time.monotonic() + 60
        while sorted(len(listener.owned) for listener in listeners) != [2, 2] or sum(map(len, records)) < 200:
            assert time.monotonic() < deadline, f"owned {[l.owned for l in listeners]}, {sum(map(len, records))}"
            await poll_all((0, 1))
        assert sorted(r for rs in records for r in rs) == sorted((i % 4, i // 4) for i in range(200))
        listeners[1].revoked.clear()  # the revocations that balanced the group
        await consumers[0].close()  # auto commit, then leave
        deadline = time.monotonic() + 20
        while len(listeners[1].owned) != 4:
            assert time.monotonic() < deadline, "the other member to take over"
            await poll_all((1,))
        assert not listeners[1].revoked
        await consumers[1].close()

    asyncio.run(scenario())
