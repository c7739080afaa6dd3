"""The producers' plain path (a bytes value without key, partition, timestamp or headers, appended
straight to the sticky partition's open batch) against the scripted broker: records keep their
order among keyed and headered ones, every future and callback gets its own metadata, each send
counts its bytes for the sticky partitioner, the asyncio producer resolves a batch's futures in
one pass (its error to each, a cancelled one skipped), a closed producer refuses a plain send
to a topic it knows, and a route serves while the cluster's topic map holds its metadata."""

from __future__ import annotations

import asyncio
import time

import pytest

from gregor.aio import Producer as AioProducer
from gregor.client import KafkaException, Producer
from gregor.client.network import PartitionMetadata, TopicMetadata
from gregor.client.producer.base import Route
from gregor.client.producer.future import RecordMetadata
from gregor.protocol.error_codes import ErrorCode
from tests.client.fake_broker import ANSWER
from tests.client.fake_producer_broker import FakeProducerBroker

TOPIC = "fake-topic"


@pytest.fixture
def fake():
    with FakeProducerBroker({TOPIC: 1, "wide": 3}) as broker:
        yield broker


def config(fake: FakeProducerBroker, **overrides) -> dict:
    # small batches: the records below span several, each opened by the full path
    return {"bootstrap.servers": fake.bootstrap, "retry.backoff.ms": 10, "reconnect.backoff.ms": 10,
            "batch.size": 1024, "linger.ms": 50, **overrides}


def test_plain_sends_keep_their_order_among_keyed_ones_with_their_own_metadata(fake):
    acknowledged: list[tuple[int, RecordMetadata | None]] = []
    values = [b"v%03d" % index * 10 for index in range(60)]
    with Producer(config(fake)) as producer:
        producer.send(TOPIC, b"first").get(20)  # the route is known from here on: later plain sends take the path
        before = time.time_ns() // 1_000_000
        futures = []
        for index, value in enumerate(values):
            if index % 17 == 5:
                future = producer.send(TOPIC, value, key=b"k")
            elif index % 17 == 11:
                future = producer.send(TOPIC, value, headers={"h": b"1"})
            else:
                future = producer.send(TOPIC, value,
                                       callback=lambda metadata, error, index=index: acknowledged.append(
                                           (index, metadata)))
            futures.append(future)
        producer.flush(20)
        after = time.time_ns() // 1_000_000
    metadata = [future.get(0) for future in futures]
    assert fake.values(TOPIC) == [b"first", *values]
    assert [item.offset for item in metadata] == list(range(1, 61))
    assert all(before <= item.timestamp <= after and item.topic == TOPIC and item.partition == 0
               for item in metadata)
    assert [(item.serialized_key_size, item.serialized_value_size) for item in metadata] == \
        [(1 if index % 17 == 5 else -1, len(value)) for index, value in enumerate(values)]
    plain = [index for index in range(60) if index % 17 not in (5, 11)]
    assert [index for index, _ in acknowledged] == plain  # callbacks in send order
    assert [item for _, item in acknowledged] == [metadata[index] for index in plain]


def test_plain_sends_count_their_bytes_for_the_sticky_partitioner(fake):
    """Each plain send adds its estimated size to the sticky partition's byte count (which moves
    the partition on after a batch's worth, KIP-480), exactly as the full path does."""
    with Producer(config(fake, **{"batch.size": 1 << 20, "linger.ms": 1000})) as producer:
        producer.send("wide", b"first")  # opens the batch: the sends below take the plain path
        sticky = producer._routes["wide"].sticky
        before = sticky.produced_bytes
        futures = [producer.send("wide", b"v" * size) for size in range(20, 120)]
        assert sticky.produced_bytes - before == sum(22 + size for size in range(20, 120))
        producer.flush(20)
    assert len({future.get(0).partition for future in futures}) == 1  # under a batch: no switch


def test_asyncio_plain_sends_count_their_bytes_for_the_sticky_partitioner(fake):
    async def main() -> int:
        async with AioProducer(config(fake, **{"batch.size": 1 << 20, "linger.ms": 1000})) as producer:
            await producer.enqueue("wide", b"first")
            sticky = producer._routes["wide"].sticky
            before = sticky.produced_bytes
            for size in range(20, 120):
                await producer.enqueue("wide", b"v" * size)
            with pytest.raises(TypeError, match="topic must be str"):  # refused as on the full path
                await producer.enqueue(["wide"], b"v")
            return sticky.produced_bytes - before

    assert asyncio.run(main()) == sum(22 + size for size in range(20, 120))


def test_a_closed_producer_refuses_a_plain_send_to_a_known_topic(fake):
    producer = Producer(config(fake))
    producer.send(TOPIC, b"x").get(20)
    producer.close()
    with pytest.raises(KafkaException, match="closed"):
        producer.send(TOPIC, b"y")


def test_the_asyncio_producer_resolves_each_batch_in_one_pass(fake):
    """The third Produce request (the second batch of plain sends) fails with a fatal error: its
    records' futures raise it, the other records resolve to consecutive offsets, and a future
    cancelled before its batch completed stays cancelled (its record is still delivered)."""
    fake.produce_actions.extend([ANSWER, ANSWER, ErrorCode.RECORD_LIST_TOO_LARGE])
    values = [b"%03d" % index * 30 for index in range(40)]

    async def main() -> tuple[list, int, int]:
        producer = AioProducer(config(fake, **{"enable.idempotence": False, "acks": 1}))
        await producer.send(TOPIC, b"first")
        before = time.time_ns() // 1_000_000
        futures = [await producer.enqueue(TOPIC, value) for value in values]
        futures[3].cancel()
        await producer.flush(20)
        after = time.time_ns() // 1_000_000
        await producer.close()
        with pytest.raises(KafkaException, match="closed"):
            await producer.enqueue(TOPIC, b"late")
        return futures, before, after

    futures, before, after = asyncio.run(main())
    assert futures[3].cancelled()
    failed = [index for index, future in enumerate(futures) if index != 3 and future.exception() is not None]
    assert failed and failed == list(range(failed[0], failed[-1] + 1)) and 3 not in range(failed[0], failed[-1] + 1)
    assert all(futures[index].exception().name == "RECORD_LIST_TOO_LARGE" for index in failed)
    delivered = [index for index in range(40) if index not in failed]
    assert fake.values(TOPIC) == [b"first", *(values[index] for index in delivered)]
    metadata = {index: futures[index].result() for index in delivered if index != 3}
    assert [metadata[index].offset for index in delivered if index != 3] == \
        [1 + position for position, index in enumerate(delivered) if index != 3]
    assert all(before <= item.timestamp <= after and (item.topic, item.partition) == (TOPIC, 0)
               and (item.serialized_key_size, item.serialized_value_size) == (-1, 90) for item in metadata.values())


def test_a_route_serves_while_the_topic_map_holds_its_metadata():
    """The plain path checks a route by the identity of the cluster's topic map: a new map that
    kept the topic's metadata (an update that did not ask about it) is followed, one with new
    metadata for the topic is not (the full path makes a new route)."""
    metadata = TopicMetadata("t", None, False, {0: PartitionMetadata("t", 0, 1, 0, (1,), (1,))})
    first = {"t": metadata}
    route = Route(metadata, None, first)
    assert route.topics is first
    other_topic_updated = {"t": metadata, "u": TopicMetadata("u", None, False, {})}
    assert route.follow(other_topic_updated) and route.topics is other_topic_updated
    refreshed = {"t": TopicMetadata("t", None, False, dict(metadata.partitions))}
    assert not route.follow(refreshed) and route.topics is other_topic_updated
    assert Route(metadata, None, refreshed).topics is None  # read from a map replaced since
