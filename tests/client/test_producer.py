"""Gregor's Producer against a real Gregor broker and against tansu, with confluent-kafka
(librdkafka) reading back what landed: the independent oracle of the bytes on the wire."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentPartition

from gregor.client import KafkaException
from gregor.client.interceptors import ProducerInterceptor
from gregor.client.producer import Producer, ProducerRecord, RecordMetadata

pytestmark = pytest.mark.interop



@pytest.fixture
def producer_factory(peer):
    made = []

    def make(**config):
        producer = Producer({"bootstrap.servers": peer.bootstrap}, **config)
        made.append(producer)
        return producer
    yield make
    for producer in made:
        producer.close(5)


def read_back(bootstrap: str, topic: str, partition: int | list[int], count: int, timeout: float = 20) -> list:
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": f"rb-{uuid.uuid4().hex[:6]}",
                                  "enable.auto.commit": False})
    partitions = partition if isinstance(partition, list) else [partition]
    consumer.assign([ConfluentPartition(topic, index, 0) for index in partitions])
    messages = []
    try:
        deadline = time.monotonic() + timeout
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
    finally:
        consumer.close()
    return messages


def test_records_arrive_with_keys_values_headers_and_timestamps(peer, topic_factory, producer_factory):
    topic = topic_factory()
    producer = producer_factory()
    futures = [producer.send(topic, b"value-%d" % index, key=b"key-%d" % index, partition=0,
                             timestamp=1_700_000_000_000 + index, headers={"h": b"x%d" % index, "n": None})
               for index in range(20)]
    metadata = [future.get(20) for future in futures]
    assert [item.offset for item in metadata] == list(range(metadata[0].offset, metadata[0].offset + 20))
    assert metadata[3] == RecordMetadata(topic, 0, metadata[0].offset + 3, 1_700_000_000_003, 5, 7)
    messages = read_back(peer.bootstrap, topic, 0, 20)
    assert [(m.key(), m.value(), m.timestamp()[1]) for m in messages] == [
        (b"key-%d" % i, b"value-%d" % i, 1_700_000_000_000 + i) for i in range(20)]
    assert messages[5].headers() == [("h", b"x5"), ("n", None)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_compression_codec_is_readable_by_librdkafka(peer, topic_factory, producer_factory, codec):
    topic = topic_factory()
    producer = producer_factory(compression_type=codec, linger_ms=20)
    for index in range(200):
        producer.send(topic, (b"payload %d " % index) * 10, key=str(index).encode(), partition=0)
    producer.flush(20)
    messages = read_back(peer.bootstrap, topic, 0, 200)
    assert [m.value() for m in messages] == [(b"payload %d " % i) * 10 for i in range(200)]


def test_callbacks_run_in_order_and_flush_waits_for_them(topic_factory, producer_factory):
    topic = topic_factory()
    producer = producer_factory(linger_ms=1000)
    seen = []
    for index in range(50):
        producer.send(topic, b"%d" % index, partition=0,
                      callback=lambda metadata, error, index=index: seen.append((index, metadata.offset, error)))
    producer.flush(20)
    assert [index for index, _, _ in seen] == list(range(50))
    assert all(error is None for _, _, error in seen)
    assert [offset for _, offset, _ in seen] == list(range(seen[0][1], seen[0][1] + 50))


def test_keyed_records_land_where_librdkafka_murmur2_puts_them(peer, topic_factory, producer_factory):
    topic = topic_factory(7)
    producer = producer_factory()
    keys = [f"user-{index}".encode() for index in range(300)] + [bytes([index]) * index for index in range(1, 40)]
    ours = {key: producer.send(topic, b"v", key=key).get(20).partition for key in keys}
    reference = ConfluentProducer({"bootstrap.servers": peer.bootstrap, "partitioner": "murmur2_random"})
    theirs = {}
    for key in keys:
        reference.produce(topic, b"v", key=key,
                          on_delivery=lambda error, message: theirs.__setitem__(message.key(), message.partition()))
    assert reference.flush(20) == 0
    assert ours == theirs
    assert len(set(ours.values())) == 7


def test_many_threads_share_one_producer(peer, topic_factory, producer_factory):
    topic = topic_factory(3)
    producer = producer_factory(linger_ms=2)
    threads_count, per_thread = 4, 300
    failures = []

    def work(thread_index: int) -> None:
        futures = [producer.send(topic, f"{thread_index}:{index}".encode(), key=str(thread_index).encode())
                   for index in range(per_thread)]
        for future in futures:
            try:
                future.get(30)
            except KafkaException as error:
                failures.append(error)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    values = [m.value().decode() for m in read_back(peer.bootstrap, topic, [0, 1, 2], threads_count * per_thread)]
    assert len(values) == threads_count * per_thread
    by_thread: dict[str, list[int]] = {}
    for value in values:
        thread_index, index = value.split(":")
        by_thread.setdefault(thread_index, []).append(int(index))
    assert {key: order for key, order in by_thread.items()} == {
        str(index): list(range(per_thread)) for index in range(threads_count)}


def test_serializers_and_interceptors(peer, topic_factory, producer_factory):
    topic = topic_factory()
    acknowledged = []

    class Stamp(ProducerInterceptor):
        def on_send(self, record: ProducerRecord) -> ProducerRecord:
            return record._replace(value={**record.value, "stamped": True})

        def on_acknowledgement(self, metadata, exception) -> None:
            acknowledged.append((metadata.offset if metadata else None, exception))

    producer = producer_factory(key_serializer="str", value_serializer="json", interceptor_classes=[Stamp()])
    producer.send(topic, {"n": 1}, key="é", partition=0).get(20)
    producer.send(topic, {"n": 2}, key=None, partition=0).get(20)
    messages = read_back(peer.bootstrap, topic, 0, 2)
    assert [(m.key(), json.loads(m.value())) for m in messages] == [
        ("é".encode(), {"n": 1, "stamped": True}), (None, {"n": 2, "stamped": True})]
    assert [error for _, error in acknowledged] == [None, None]


def test_acks_zero_gives_no_offsets(peer, topic_factory, producer_factory):
    topic = topic_factory()
    producer = producer_factory(acks=0)
    metadata = [producer.send(topic, b"%d" % index, partition=0) for index in range(10)]
    assert {future.get(20).offset for future in metadata} == {-1}
    assert len(read_back(peer.bootstrap, topic, 0, 10)) == 10


def test_a_record_over_max_request_size_is_refused_and_nothing_is_sent(peer, topic_factory, producer_factory):
    topic = topic_factory()
    producer = producer_factory(max_request_size=1000)
    with pytest.raises(KafkaException) as raised:
        producer.send(topic, b"x" * 2000, partition=0)
    assert raised.value.name == "MESSAGE_TOO_LARGE"
    assert "max.request.size (1000)" in str(raised.value)
    producer.send(topic, b"small", partition=0).get(20)
    assert [m.value() for m in read_back(peer.bootstrap, topic, 0, 1)] == [b"small"]


def test_a_partition_the_topic_lacks_is_refused(topic_factory, producer_factory):
    topic = topic_factory(2)
    producer = producer_factory(max_block_ms=2000)
    with pytest.raises(KafkaException) as raised:
        producer.send(topic, b"x", partition=5)
    assert raised.value.name == "_UNKNOWN_PARTITION"
    assert "partition 5" in str(raised.value)


def test_send_blocks_when_the_buffer_is_full_then_raises(topic_factory, producer_factory):
    topic = topic_factory(3)
    producer = producer_factory(batch_size=1000, buffer_memory=2000, linger_ms=60_000, max_block_ms=300)
    producer.send(topic, b"a", partition=0)
    producer.send(topic, b"b", partition=1)
    with pytest.raises(KafkaException) as raised:
        producer.send(topic, b"c", partition=2)
    assert raised.value.name == "_QUEUE_FULL"
    assert "buffer.memory" in str(raised.value)
    producer.flush(20)
    retried = producer.send(topic, b"c", partition=2)
    producer.flush(20)
    assert retried.get(0).partition == 2


def test_close_sends_what_is_queued_and_refuses_later_sends(peer, topic_factory):
    topic = topic_factory()
    producer = Producer({"bootstrap.servers": peer.bootstrap}, linger_ms=60_000)
    futures = [producer.send(topic, b"%d" % index, partition=0) for index in range(10)]
    futures += [producer.send(topic, b"keyless") for _ in range(2)]  # the second takes send's short path
    producer.close(20)
    assert all(future.done() and future.exception(0) is None for future in futures)
    with pytest.raises(KafkaException) as raised:
        producer.send(topic, b"late")
    assert raised.value.name == "_STATE"
    producer.close()

