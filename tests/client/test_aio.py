"""gregor.aio against a real Gregor broker and against tansu, with librdkafka (confluent-kafka)
on the same topics as the independent oracle: what the async producer writes librdkafka reads,
what librdkafka writes the async consumer reads, keyed records land on the partitions librdkafka
picks (murmur2), and async and sync consumers share one group."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer as ConfluentProducer

from gregor.aio import AdminClient, Consumer, Producer, RecordMetadata, TopicPartition
from gregor.client import Consumer as SyncConsumer
from gregor.client import KafkaException
from gregor.client.admin import NewTopic
from tests.client.test_producer import read_back

pytestmark = pytest.mark.interop


def produce_with_librdkafka(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value=value, key=value, partition=partition)
    assert producer.flush(20) == 0


def test_async_producer_send_returns_metadata_and_librdkafka_reads_the_records(peer, topic_factory):
    topic = topic_factory()

    async def main() -> list[RecordMetadata]:
        async with Producer(bootstrap_servers=peer.bootstrap, linger_ms=5) as producer:
            first = await producer.send(topic, b"value-0", key=b"key-0", partition=0,
                                        timestamp=1_700_000_000_000, headers={"h": b"x0", "n": None})
            rest = await asyncio.gather(*(
                producer.send(topic, b"value-%d" % index, key=b"key-%d" % index, partition=0,
                              timestamp=1_700_000_000_000 + index, headers={"h": b"x%d" % index, "n": None})
                for index in range(1, 20)))
            return [first, *rest]

    metadata = asyncio.run(main())
    assert [item.offset for item in metadata] == list(range(metadata[0].offset, metadata[0].offset + 20))
    assert metadata[3] == RecordMetadata(topic, 0, metadata[0].offset + 3, 1_700_000_000_003, 5, 7)
    messages = read_back(peer.bootstrap, topic, 0, 20)
    assert [(m.key(), m.value(), m.timestamp()[1]) for m in messages] == [
        (b"key-%d" % i, b"value-%d" % i, 1_700_000_000_000 + i) for i in range(20)]
    assert messages[5].headers() == [("h", b"x5"), ("n", None)]


def test_async_consumer_reads_what_librdkafka_wrote_by_batch_and_by_iteration(peer, topic_factory):
    """getmany, then `async for` left after 10 records (a poll's worth was fetched): the position
    stops at what the loop saw, and getmany and a new loop go on from there, losing nothing."""
    topic = topic_factory()
    produce_with_librdkafka(peer.bootstrap, topic, [b"%d" % index for index in range(60)])

    async def main() -> tuple[list[int], list[int], list[int], list[int]]:
        async with Consumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign([(topic, 0)])
            batched: list[int] = []
            deadline = time.monotonic() + 20
            while len(batched) < 20 and time.monotonic() < deadline:
                found = await consumer.getmany(timeout_ms=500, max_records=20 - len(batched))
                batched.extend(record.offset for records in found.values() for record in records)
            iterated: list[int] = []
            async with asyncio.timeout(20):
                async for record in consumer:
                    assert record.value == b"%d" % record.offset and record.topic_partition == (topic, 0)
                    iterated.append(record.offset)
                    if len(iterated) == 10:
                        break
            assert await consumer.position((topic, 0)) == 30
            again = await consumer.getmany(timeout_ms=5000, max_records=10)
            polled = [record.offset for records in again.values() for record in records]
            rest: list[int] = []
            async with asyncio.timeout(20):
                async for record in consumer:
                    rest.append(record.offset)
                    if record.offset == 59:
                        break
            return batched, iterated, polled, rest

    batched, iterated, polled, rest = asyncio.run(main())
    assert batched + iterated + polled + rest == list(range(60))
    assert (len(batched), len(iterated), len(polled)) == (20, 10, 10)


def test_keyed_records_land_on_the_partitions_librdkafka_picks(peer, topic_factory):
    """murmur2 parity, interleaved: librdkafka and the async producer write the same keys to the
    same 4-partition topic, each key lands on one partition, and librdkafka reads all of it."""
    topic = topic_factory(4)
    keys = [b"user-%d" % index for index in range(40)]
    confluent = ConfluentProducer({"bootstrap.servers": peer.bootstrap, "partitioner": "murmur2_random"})
    theirs: dict[bytes, int] = {}

    def delivered(error, message) -> None:
        assert error is None
        theirs[message.key()] = message.partition()

    async def main() -> dict[bytes, int]:
        ours: dict[bytes, int] = {}
        async with Producer(bootstrap_servers=peer.bootstrap) as producer:
            for key in keys:
                confluent.produce(topic, key=key, value=b"librdkafka", on_delivery=delivered)
                confluent.poll(0)
                ours[key] = (await producer.send(topic, b"gregor", key=key)).partition
        return ours

    ours = asyncio.run(main())
    assert confluent.flush(20) == 0
    assert ours == theirs and len(set(ours.values())) > 1
    messages = read_back(peer.bootstrap, topic, [0, 1, 2, 3], 80)
    by_key: dict[bytes, set[int]] = {}
    for message in messages:
        by_key.setdefault(message.key(), set()).add(message.partition())
    assert by_key == {key: {theirs[key]} for key in keys}


def gregor_only(peer) -> str:
    """Group tests run against the Gregor broker only, for time: tansu answers each join only
    after a session timeout (see test_consumer.py), which the sync group tests already pay."""
    if peer.kind == "tansu":
        pytest.skip("group tests of the async consumer run against the Gregor broker (time budget)")
    return peer.bootstrap


def test_async_and_sync_consumers_share_a_group(peer, topic_factory):
    bootstrap = gregor_only(peer)
    topic = topic_factory(4)
    group = f"g-{uuid.uuid4().hex[:6]}"
    produce_with_librdkafka(bootstrap, topic, [b"%d" % index for index in range(40)], partition=0)
    produce_with_librdkafka(bootstrap, topic, [b"%d" % index for index in range(40, 80)], partition=3)
    sync_consumer = SyncConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                                 heartbeat_interval_ms=300)
    sync_values: list[int] = []
    stop = threading.Event()

    def sync_loop() -> None:
        while not stop.is_set():
            sync_values.extend(int(record.value) for record in sync_consumer.poll(0.1))

    async def main() -> tuple[list[int], set, set]:
        async with Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                            heartbeat_interval_ms=300) as consumer:
            consumer.subscribe([topic])
            values: list[int] = []
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                found = await consumer.getmany(timeout_ms=100)
                values.extend(int(record.value) for records in found.values() for record in records)
                mine, theirs = consumer.assignment(), sync_consumer.assignment()
                if len(mine) == 2 and len(theirs) == 2 and len(set(values) | set(sync_values)) == 80:
                    return values, mine, theirs
            raise AssertionError(f"not balanced: {consumer.assignment()} / {sync_consumer.assignment()}")

    sync_consumer.subscribe([topic])
    thread = threading.Thread(target=sync_loop)
    thread.start()
    try:
        values, mine, theirs = asyncio.run(main())
    finally:
        stop.set()
        thread.join()
        sync_consumer.close(5)
    assert mine | theirs == {TopicPartition(topic, index) for index in range(4)} and not mine & theirs
    assert sorted(values + sync_values) == list(range(80))


def test_a_rebalance_committing_in_its_task_hands_over_nothing_of_the_partitions_it_gives_up(peer, topic_factory):
    """The rebalance runs in a task beside the application's getmany calls; while it commits the
    offsets of the partitions it gives up (held here), getmany hands over none of their records,
    so the commit covers exactly what the application got and the next owner repeats nothing."""
    bootstrap = gregor_only(peer)
    topic = topic_factory(1)
    group = f"g-{uuid.uuid4().hex[:6]}"
    produce_with_librdkafka(bootstrap, topic, [b"%d" % index for index in range(500)])
    key = TopicPartition(topic, 0)

    async def main() -> None:
        async with Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                            heartbeat_interval_ms=200) as consumer:
            consumer.subscribe([topic])
            values: list[int] = []

            async def take(timeout_ms: int) -> list[int]:
                """One record at most, slowly: records stay buffered until the rebalance begins."""
                found = await consumer.getmany(timeout_ms=timeout_ms, max_records=1)
                await asyncio.sleep(0.02)
                return [int(record.value) for records in found.values() for record in records]

            async with asyncio.timeout(20):
                while len(values) < 10:
                    values += await take(100)
            committing, release = asyncio.Event(), asyncio.Event()
            committed_offsets: list[dict] = []
            commit = consumer._commit

            async def held_commit(offsets, *args):
                committed_offsets.append(dict(offsets))
                committing.set()
                await release.wait()
                return await commit(offsets, *args)

            consumer._commit = held_commit
            other = SyncConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest")
            other.subscribe([topic])
            joiner = threading.Thread(target=other.poll, args=(3.0,))
            joiner.start()
            try:
                async with asyncio.timeout(20):
                    while not committing.is_set():
                        values += await take(50)
                while_committing = [value for _ in range(5) for value in await take(50)]
                release.set()
            finally:
                joiner.join()
                other.close(5)
            assert while_committing == []
            assert values == list(range(len(values)))
            assert committed_offsets[0][key].offset == len(values)

    asyncio.run(main())


def test_commits_are_read_back_by_committed_and_a_new_member(peer, topic_factory):
    bootstrap = gregor_only(peer)
    topic = topic_factory()
    group = f"g-{uuid.uuid4().hex[:6]}"
    produce_with_librdkafka(bootstrap, topic, [b"%d" % index for index in range(20)])

    async def main() -> None:
        async with Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                            enable_auto_commit=False) as consumer:
            consumer.subscribe([topic])
            seen: list[int] = []
            async with asyncio.timeout(20):
                async for record in consumer:
                    seen.append(record.offset)
                    if record.offset == 11:
                        await consumer.commit()
                        break
            assert (await consumer.committed([(topic, 0)]))[TopicPartition(topic, 0)].offset == 12
            await consumer.commit({(topic, 0): 15})
        async with Consumer(bootstrap_servers=bootstrap, group_id=group) as again:
            again.subscribe([topic])
            found: list[int] = []
            while len(found) < 5:
                batch = await asyncio.wait_for(again.getmany(timeout_ms=500), 20)
                found.extend(record.offset for records in batch.values() for record in records)
            assert found == [15, 16, 17, 18, 19]

    asyncio.run(main())


def test_async_admin_manages_topics_and_reads_offsets(peer):
    name = f"adm-{uuid.uuid4().hex[:6]}"

    async def main() -> None:
        async with AdminClient(bootstrap_servers=peer.bootstrap) as admin:
            created = await admin.create_topics([NewTopic(name, 2, 1)])
            assert not isinstance(created[name], Exception), created
            assert name in await admin.list_topics()
            described = (await admin.describe_topics([name]))[name]
            assert [partition.partition for partition in described.partitions] == [0, 1]
            async with Producer(bootstrap_servers=peer.bootstrap) as producer:
                await producer.send(name, b"x", partition=1)
            consumer = Consumer(bootstrap_servers=peer.bootstrap)
            try:
                assert await consumer.end_offsets([(name, 0), (name, 1)]) == {
                    TopicPartition(name, 0): 0, TopicPartition(name, 1): 1}
            finally:
                await consumer.close()
            assert (await admin.delete_topics([name]))[name] is None

    asyncio.run(main())


def test_wrong_argument_types_name_the_argument_and_closed_clients_refuse(broker):
    async def main() -> None:
        producer = Producer(bootstrap_servers=broker.bootstrap)
        with pytest.raises(TypeError, match="topic"):
            await producer.send(b"topic", b"v")
        with pytest.raises(TypeError, match="partition"):
            await producer.send("t", b"v", partition="0")
        with pytest.raises(TypeError, match="timestamp"):
            await producer.send("t", b"v", timestamp=1.5)
        await producer.close()
        with pytest.raises(KafkaException, match="closed"):
            await producer.send("t", b"v")
        consumer = Consumer(bootstrap_servers=broker.bootstrap)
        with pytest.raises(TypeError, match="partitions"):
            consumer.assign("topic")
        with pytest.raises(TypeError, match="timeout_ms"):
            await consumer.getmany(timeout_ms="1")
        with pytest.raises(TypeError, match="offset"):
            consumer.seek(("t", 0), "5")
        await consumer.close()
        with pytest.raises(KafkaException, match="closed"):
            await consumer.getmany()
        admin = AdminClient(bootstrap_servers=broker.bootstrap)
        with pytest.raises(TypeError, match="new_topics"):
            await admin.create_topics("topic")
        with pytest.raises(TypeError, match="group_id"):
            await admin.list_consumer_group_offsets(5)
        await admin.close()
        with pytest.raises(KafkaException, match="closed"):
            await admin.list_topics()

    asyncio.run(main())


def test_a_client_belongs_to_one_event_loop(broker):
    producer = Producer(bootstrap_servers=broker.bootstrap)
    with pytest.raises(KafkaException, match="running event loop"):
        producer._start()

    async def first() -> None:
        await producer.start()

    async def second() -> None:
        with pytest.raises(KafkaException, match="another event loop"):
            await producer.send("t", b"v")

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(first())
        asyncio.run(second())
        loop.run_until_complete(producer.close())
    finally:
        loop.close()


def test_a_full_buffer_makes_sends_wait_for_room_not_fail(broker):
    """buffer.memory of two batches: sends wait on the loop (no thread blocks it) while the sender,
    on the same loop, frees room; every record is acknowledged in order."""
    topic = f"room-{uuid.uuid4().hex[:6]}"

    async def main() -> list[int]:
        async with Producer(bootstrap_servers=broker.bootstrap, batch_size=4096, buffer_memory=8192,
                            linger_ms=1) as producer:
            futures = [await producer.enqueue(topic, b"x" * 100, partition=0) for _ in range(1000)]
            return [metadata.offset for metadata in await asyncio.wait_for(asyncio.gather(*futures), 30)]

    offsets = asyncio.run(main())
    assert offsets == list(range(offsets[0], offsets[0] + 1000))
