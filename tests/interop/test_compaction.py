"""Log compaction seen by real clients: a compacted topic ends up with the latest value per key."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.interop

KEYS = 40
ROUNDS = 25


def read_all(bootstrap: str, topic: str) -> list[tuple[bytes, bytes | None, int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-reader",
                         "enable.partition.eof": True, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    records = []
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of partition within 10 s"
            if message.error():
                assert message.error().code() == -191, message.error()  # _PARTITION_EOF
                return records
            records.append((message.key(), message.value(), message.offset()))
    finally:
        consumer.close()


def test_compacted_topic_keeps_exactly_the_latest_value_per_key(broker_factory):
    broker = broker_factory({"log.cleaner.backoff.ms": "100"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = "compacted"
    admin.create_topics([NewTopic(topic, 1, 1, config={
        "cleanup.policy": "compact", "segment.bytes": "8192", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "3600000"})])[topic].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "batch.size": 2000, "linger.ms": 1})
    latest: dict[bytes, bytes | None] = {}
    for round_number in range(ROUNDS):
        for key_number in range(KEYS):
            key = b"key-%02d" % key_number
            deleted = round_number == ROUNDS - 1 and key_number % 5 == 0
            value = None if deleted else b"value-%d-%d" % (key_number, round_number)
            producer.produce(topic, key=key, value=value)
            latest[key] = value
        producer.flush(10)
    for filler in range(40):  # unique keys, enough to close the segments holding the updates
        key = b"filler-%02d" % filler
        producer.produce(topic, key=key, value=b"f" * 200)
        latest[key] = b"f" * 200
        producer.flush(10)
    written = KEYS * ROUNDS + 40

    deadline = time.monotonic() + 60
    while True:
        records = read_all(broker.bootstrap, topic)
        seen = [key for key, _, _ in records]
        if len(seen) == len(set(seen)) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(seen) == len(set(seen)), f"{len(seen) - len(set(seen))} superseded records left after 60 s"
    assert len(records) < written
    assert {key: value for key, value, _ in records} == latest
    offsets = [offset for _, _, offset in records]
    assert offsets == sorted(offsets) and offsets[-1] == written - 1
