"""Third-party clients produce and consume through a real gregor server."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid

import pytest

pytestmark = pytest.mark.interop

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TIMESTAMP = 1_700_000_000_000


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def sample_records(count: int = 20):
    """(key, value, headers, timestamp): null keys, null values and headers included."""
    records = []
    for i in range(count):
        key = None if i % 3 == 0 else f"key-{i}".encode()
        value = None if i % 6 == 1 else bytes([i % 256]) * (i * 13)
        headers = [("h", f"v{i}".encode()), ("empty", b"")] if i % 2 else []
        records.append((key, value, headers, TIMESTAMP + i))
    return records


def confluent_produce(bootstrap, topic, records, codec="none", **extra):
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                         "enable.idempotence": True, **extra})
    errors = []
    for key, value, headers, ts in records:
        producer.produce(topic, key=key, value=value, headers=headers or None, timestamp=ts,
                         on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert producer.flush(20) == 0
    assert errors == []


def confluent_consume(bootstrap, topic, count):
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            assert message.error() is None, message.error()
            got.append((message.key(), message.value(), message.headers() or [], message.timestamp()[1]))
    consumer.close()
    return got


def kafka_python_produce(bootstrap, topic, records, codec="none"):
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                             enable_idempotence=True, acks="all")
    futures = [producer.send(topic, key=k, value=v, headers=h, timestamp_ms=ts, partition=0)
               for k, v, h, ts in records]
    for future in futures:
        future.get(timeout=20)
    producer.close()


def kafka_python_consume(bootstrap, topic, count):
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    got = []
    for message in consumer:
        got.append((message.key, message.value, list(message.headers or []), message.timestamp))
        if len(got) == count:
            break
    consumer.close()
    return got


def aiokafka_produce(bootstrap, topic, records, codec="none"):
    import aiokafka

    async def run():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                                             compression_type=None if codec == "none" else codec)
        await producer.start()
        try:
            for k, v, h, ts in records:
                await producer.send_and_wait(topic, v, key=k, headers=h, timestamp_ms=ts, partition=0)
        finally:
            await producer.stop()
    asyncio.run(run())


def aiokafka_consume(bootstrap, topic, count):
    import aiokafka

    async def run():
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        partition = aiokafka.TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek(partition, 0)
        got = []
        try:
            deadline = time.monotonic() + 20
            while len(got) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for messages in batches.values():
                    got.extend((m.key, m.value, list(m.headers or []), m.timestamp) for m in messages)
        finally:
            await consumer.stop()
        return got
    return asyncio.run(run())


PRODUCERS = {"confluent": confluent_produce, "kafka-python": kafka_python_produce, "aiokafka": aiokafka_produce}
CONSUMERS = {"confluent": confluent_consume, "kafka-python": kafka_python_consume, "aiokafka": aiokafka_consume}


def normalise(records):
    return [(k, v, [(name, bytes(value) if value is not None else None) for name, value in h], ts)
            for k, v, h, ts in records]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_every_client_reads_what_each_client_wrote(broker, producer, codec):
    topic = topic_name(f"x-{producer}-{codec}")
    records = sample_records()
    PRODUCERS[producer](broker.bootstrap, topic, records, codec)
    expected = normalise(records)
    for name, consume in CONSUMERS.items():
        assert normalise(consume(broker.bootstrap, topic, len(records))) == expected, name


def test_kcat_round_trip_with_keys_and_compression(broker):
    topic = topic_name("kcat")
    lines = "".join(f"k{i}:value {i}\n" for i in range(50))
    for codec in CODECS:
        subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", topic, "-K:", "-z", codec],
                       input=lines.encode(), check=True, timeout=30)
    out = subprocess.run(["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-e", "-f", "%k=%s\n"],
                         capture_output=True, check=True, timeout=30).stdout.decode()
    assert out.splitlines() == [f"k{i}=value {i}" for i in range(50)] * len(CODECS)
    got = confluent_consume(broker.bootstrap, topic, 250)
    assert [(k, v) for k, v, _, _ in got[:2]] == [(b"k0", b"value 0"), (b"k1", b"value 1")]


def test_message_just_under_the_limit_is_accepted_and_over_is_refused(broker):
    from confluent_kafka import KafkaError, Producer
    topic = topic_name("size")
    limit = 200000
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 1000000,
                         "compression.type": "none", "batch.num.messages": 1})
    results = []
    producer.produce(topic, value=b"a" * (limit - 200), on_delivery=lambda e, m: results.append(e))
    producer.produce(topic, value=b"b" * (limit + 200), on_delivery=lambda e, m: results.append(e))
    producer.flush(20)
    assert results[0] is None
    assert results[1] is not None and results[1].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_kafka_python_reports_message_too_large(broker):
    from kafka import KafkaProducer
    from kafka.errors import MessageSizeTooLargeError
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_request_size=2_000_000)
    with pytest.raises(MessageSizeTooLargeError):
        producer.send(topic_name("big"), value=b"x" * 300000).get(timeout=20)
    producer.close()


def test_idempotent_producer_gets_a_producer_id_and_offsets_are_contiguous(broker):
    topic = topic_name("idem")
    confluent_produce(broker.bootstrap, topic, sample_records(100), "lz4")
    got = confluent_consume(broker.bootstrap, topic, 100)
    assert len(got) == 100
