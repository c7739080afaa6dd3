"""Gregor's ShareConsumer (sync and asyncio) against a Gregor broker, and beside librdkafka's
ShareConsumer in one share group: every record goes to exactly one member; a killed member's
records come back to another with delivery count 2; RELEASE redelivers, REJECT does not; a
record released up to `group.share.delivery.count.limit` is archived; explicit mode refuses to
poll past an unacknowledged record; close releases what the member holds."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import ShareConsumer as ConfluentShareConsumer

from gregor import aio
from gregor.client import AcknowledgeType, KafkaException, ShareConsumer
from gregor.client.config import ConfigError
from tests.interop.test_share_groups import DELIVERY_LIMIT, LOCK_MS, create_topic, produce, share_broker  # noqa: F401

pytestmark = pytest.mark.interop


def names() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"sc-{suffix}", f"sg-{suffix}"


def gregor_share(bootstrap: str, group: str, topic: str, **extra) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}, **extra)
    consumer.subscribe([topic])
    return consumer


def poll_until(consumer: ShareConsumer, done, timeout: float) -> list:
    received: list = []
    deadline = time.monotonic() + timeout
    while not done(received):
        assert time.monotonic() < deadline, f"received {[(r.partition, r.offset) for r in received]}"
        received.extend(consumer.poll(0.2))
    return received


def test_config_and_state_errors():
    with pytest.raises(ConfigError, match="group.id is required"):
        ShareConsumer(bootstrap_servers="127.0.0.1:9")
    with pytest.raises(ConfigError, match="share.acknowledgement.mode"):
        ShareConsumer(bootstrap_servers="127.0.0.1:9", group_id="g", share_acknowledgement_mode="sometimes")
    consumer = ShareConsumer(bootstrap_servers="127.0.0.1:9", group_id="g")
    try:
        with pytest.raises(KafkaException, match="not subscribed"):
            consumer.poll(0)
        consumer.subscribe(["t"])
        polling = threading.Thread(target=consumer.poll, args=(1.0,))
        polling.start()
        time.sleep(0.2)
        with pytest.raises(KafkaException, match="not safe for multi-threaded access"):
            consumer.poll(0)
        polling.join()
    finally:
        consumer.close()
    with pytest.raises(KafkaException, match="closed"):
        consumer.poll(0)


def test_three_consumers_on_two_partitions_get_each_record_once(share_broker):  # noqa: F811
    topic, group = names()
    create_topic(share_broker.bootstrap, topic, 2)
    consumers = [gregor_share(share_broker.bootstrap, group, topic, max_poll_records=10) for _ in range(3)]
    try:
        produce(share_broker.bootstrap, topic, 300, 2)
        seen: list[list] = [[], [], []]
        deadline = time.monotonic() + 60
        while sum(map(len, seen)) < 300:
            assert time.monotonic() < deadline, f"{sum(map(len, seen))} records"
            for index, consumer in enumerate(consumers):
                seen[index].extend(consumer.poll(0.05))
        everything = sorted((r.partition, r.offset) for records in seen for r in records)
        assert everything == sorted((i % 2, i // 2) for i in range(300)), "a record twice, or one missing"
        assert all(r.delivery_count == 1 for records in seen for r in records)
        assert sum(1 for records in seen if records) >= 2, "the records were shared"
        results = [consumer.commit_sync(10) for consumer in consumers]
        assert all(error is None for result in results for error in result.values())
    finally:
        for consumer in consumers:
            consumer.close()


def test_release_redelivers_reject_does_not_and_the_callback_hears(share_broker):  # noqa: F811
    topic, group = names()
    create_topic(share_broker.bootstrap, topic, 1)
    produce(share_broker.bootstrap, topic, 4, 1)
    consumer = gregor_share(share_broker.bootstrap, group, topic, share_acknowledgement_mode="explicit")
    heard: list = []
    consumer.set_acknowledgement_commit_callback(lambda offsets, error: heard.append((dict(offsets), error)))
    try:
        first = poll_until(consumer, lambda got: len(got) >= 4, 30)
        assert [(r.offset, r.delivery_count) for r in first] == [(0, 1), (1, 1), (2, 1), (3, 1)]
        consumer.acknowledge(first[0], AcknowledgeType.ACCEPT)
        consumer.acknowledge(first[1], AcknowledgeType.RELEASE)
        consumer.acknowledge(first[2], AcknowledgeType.REJECT)
        with pytest.raises(KafkaException, match="not acknowledged"):
            consumer.poll(0)
        consumer.acknowledge(first[3], AcknowledgeType.RELEASE)
        result = consumer.commit_sync(10)
        assert list(result.values()) == [None]
        assert heard and heard[-1][1] is None and heard[-1][0][(topic, 0)] == {0, 1, 2, 3}
        again = poll_until(consumer, lambda got: len(got) >= 2, 30)
        assert sorted((r.offset, r.delivery_count) for r in again) == [(1, 2), (3, 2)]
        for record in again:
            consumer.acknowledge(record, AcknowledgeType.ACCEPT)
        consumer.commit_sync(10)
        assert consumer.poll(1.0).count() == 0, "the rejected record came back"
    finally:
        consumer.close()


def test_a_poison_record_is_archived_at_the_delivery_limit(share_broker):  # noqa: F811
    topic, group = names()
    create_topic(share_broker.bootstrap, topic, 1)
    produce(share_broker.bootstrap, topic, 1, 1)
    consumer = gregor_share(share_broker.bootstrap, group, topic, share_acknowledgement_mode="explicit")
    try:
        counts = []
        for _ in range(DELIVERY_LIMIT):
            (record,) = poll_until(consumer, lambda got: len(got) >= 1, 30)
            counts.append(record.delivery_count)
            consumer.acknowledge(record, AcknowledgeType.RELEASE)
            consumer.commit_sync(10)
        assert counts == list(range(1, DELIVERY_LIMIT + 1))
        assert consumer.poll(1.0).count() == 0, "delivered past the delivery count limit"
    finally:
        consumer.close()


def test_close_releases_what_the_member_holds_to_the_others(share_broker):  # noqa: F811
    topic, group = names()
    create_topic(share_broker.bootstrap, topic, 1)
    produce(share_broker.bootstrap, topic, 10, 1)
    holder = gregor_share(share_broker.bootstrap, group, topic, share_acknowledgement_mode="explicit")
    held = poll_until(holder, lambda got: len(got) >= 10, 30)
    holder.close()  # nothing acknowledged: the session's close releases them at once, no lock to wait out
    other = gregor_share(share_broker.bootstrap, group, topic)
    try:
        started = time.monotonic()
        again = poll_until(other, lambda got: len(got) >= 10, 30)
        assert time.monotonic() - started < LOCK_MS / 1000
        assert sorted(r.offset for r in again) == sorted(r.offset for r in held)
        assert {r.delivery_count for r in again} == {2}
    finally:
        other.close()


def test_an_undecodable_record_is_rejected_and_raised_by_poll(share_broker):  # noqa: F811
    topic, group = names()
    create_topic(share_broker.bootstrap, topic, 1)
    producer = ConfluentProducer({"bootstrap.servers": share_broker.bootstrap})
    for value in (b'{"n": 1}', b"{broken", b'{"n": 3}'):
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(10) == 0
    consumer = gregor_share(share_broker.bootstrap, group, topic, value_deserializer="json")
    try:
        values: list = []
        raised: list[KafkaException] = []
        deadline = time.monotonic() + 30
        while len(values) < 2 or not raised:
            assert time.monotonic() < deadline, f"values {values}, raised {raised}"
            try:
                values.extend(r.value for r in consumer.poll(0.2))
            except KafkaException as error:
                raised.append(error)
        assert values == [{"n": 1}, {"n": 3}] and raised[0].name == "_BAD_MSG"
        assert consumer.poll(1.0).count() == 0, "the rejected record came back"
    finally:
        consumer.close()


MEMBER_SCRIPT = """
import json, sys
from gregor.client import ShareConsumer
consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                          "share.acknowledgement.mode": "explicit"})
consumer.subscribe([sys.argv[3]])
while True:
    for record in consumer.poll(0.2):
        print(json.dumps([record.partition, record.offset]), flush=True)
"""


@pytest.mark.slow
def test_a_killed_consumers_records_come_back_to_another(share_broker):  # noqa: F811
    topic, group = names()
    create_topic(share_broker.bootstrap, topic, 2)
    produce(share_broker.bootstrap, topic, 20, 2)
    victim = subprocess.Popen([sys.executable, "-c", MEMBER_SCRIPT, share_broker.bootstrap, group, topic],
                              stdout=subprocess.PIPE, text=True)
    held: list[tuple[int, int]] = []

    def read() -> None:
        assert victim.stdout is not None
        for line in victim.stdout:
            held.append(tuple(json.loads(line)))

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + 30
        while len(held) < 20:
            assert time.monotonic() < deadline, f"the victim holds {held}"
            time.sleep(0.05)
        victim.kill()
        victim.wait()
        survivor = gregor_share(share_broker.bootstrap, group, topic)
        try:
            again = poll_until(survivor, lambda got: len(got) >= 20, 30)
            assert sorted((r.partition, r.offset) for r in again) == sorted(held)
            assert {r.delivery_count for r in again} == {2}
        finally:
            survivor.close()
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()


def test_gregor_and_librdkafka_share_consumers_in_one_group(share_broker):  # noqa: F811
    topic, group = names()
    create_topic(share_broker.bootstrap, topic, 2)
    gregor = gregor_share(share_broker.bootstrap, group, topic, max_poll_records=5)  # leaves records to the other
    confluent = ConfluentShareConsumer({"bootstrap.servers": share_broker.bootstrap, "group.id": group})
    confluent.subscribe([topic])
    try:
        ours: list = []
        theirs: list = []
        produced = 0
        deadline = time.monotonic() + 60
        # Whoever fetches first may take all there is: records go on arriving until both had some.
        while not (ours and theirs) or len(ours) + len(theirs) < produced:
            assert time.monotonic() < deadline, f"{len(ours)} + {len(theirs)} of {produced} records"
            if len(ours) + len(theirs) == produced:
                produce(share_broker.bootstrap, topic, 20, 2, start=produced)
                produced += 20
            ours.extend((r.partition, r.offset) for r in gregor.poll(0.05))
            theirs.extend((m.partition(), m.offset()) for m in confluent.poll(0.05) if m.error() is None)
        assert sorted(ours + theirs) == sorted((i % 2, i // 2) for i in range(produced))
    finally:
        gregor.close()
        confluent.close()


def test_the_asyncio_share_consumer(share_broker):  # noqa: F811
    topic, group = names()
    create_topic(share_broker.bootstrap, topic, 2)
    produce(share_broker.bootstrap, topic, 50, 2)

    async def scenario() -> None:
        async with aio.ShareConsumer({"bootstrap.servers": share_broker.bootstrap, "group.id": group,
                                      "share.acknowledgement.mode": "explicit"}) as consumer:
            consumer.subscribe([topic])
            got: list = []
            deadline = time.monotonic() + 30
            while len(got) < 50:
                assert time.monotonic() < deadline
                records = list(await consumer.poll(0.2))
                for record in records:
                    consumer.acknowledge(record, AcknowledgeType.RELEASE if record.offset == 0 and
                                         record.delivery_count == 1 else AcknowledgeType.ACCEPT)
                got.extend(records)
            result = await consumer.commit_sync(10)
            assert all(error is None for error in result.values())
            assert sorted((r.partition, r.offset) for r in got if r.delivery_count == 1) == \
                sorted((i % 2, i // 2) for i in range(50))
            redelivered = [r for r in got if r.delivery_count == 2]
            while len(redelivered) < 2:
                assert time.monotonic() < deadline
                records = list(await consumer.poll(0.2))
                for record in records:
                    consumer.acknowledge(record)
                redelivered.extend(records)
            assert sorted((r.partition, r.offset, r.delivery_count) for r in redelivered) == [(0, 0, 2), (1, 0, 2)]

    asyncio.run(scenario())
