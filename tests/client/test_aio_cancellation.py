"""Cancelling awaits of gregor.aio clients, against a Gregor broker: a cancelled send still
delivers the record it queued, a cancelled poll or iteration loses and repeats no record, and
cancelled requests leave every connection with nothing half-written or unanswered."""

from __future__ import annotations

import asyncio
import random
import time
import uuid

import pytest

from gregor.aio import AdminClient, Consumer, Producer, TopicPartition
from gregor.client.admin import OffsetSpec
from tests.client.test_aio import produce_with_librdkafka
from tests.client.test_producer import read_back

pytestmark = pytest.mark.interop


def test_a_cancelled_send_still_delivers_the_queued_record(peer, topic_factory):
    topic = topic_factory()

    async def main() -> list:
        async with Producer(bootstrap_servers=peer.bootstrap, linger_ms=100) as producer:
            # The topic's metadata first: a send cancelled while it waits for the route has queued
            # nothing, and on a loaded machine the first lookup can outlast the 20 ms below.
            await producer.partitions_for(topic)
            tasks = [asyncio.create_task(producer.send(topic, b"%d" % index, partition=0)) for index in range(100)]
            await asyncio.sleep(0.02)  # all queued, none acknowledged yet (linger.ms)
            assert not any(task.done() for task in tasks)
            for task in tasks[::2]:
                task.cancel()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            await producer.flush(10)
            return outcomes

    outcomes = asyncio.run(main())
    assert all(isinstance(outcome, asyncio.CancelledError) for outcome in outcomes[::2])
    assert [outcome.offset for outcome in outcomes[1::2]] == list(range(1, 100, 2))
    assert [message.value() for message in read_back(peer.bootstrap, topic, 0, 100)] == \
        [b"%d" % index for index in range(100)]


def test_cancelled_polls_and_iterations_lose_and_repeat_nothing(peer, topic_factory):
    topic = topic_factory()
    total = 400

    async def main() -> tuple[list[int], int]:
        rng = random.Random(7)
        cancelled = 0
        async with Consumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest",
                            max_poll_records=7) as consumer:
            consumer.assign([(topic, 0)])
            loop = asyncio.get_running_loop()
            writer = loop.run_in_executor(None, _trickle, peer.bootstrap, topic, total)
            seen: list[int] = []
            deadline = time.monotonic() + 30
            while len(seen) < total and time.monotonic() < deadline:
                if rng.random() < 0.5:
                    task = asyncio.ensure_future(consumer.getmany(timeout_ms=50))
                else:
                    task = asyncio.ensure_future(_next_record(consumer))
                await asyncio.sleep(rng.choice([0, 0, 0.0005, 0.002]))
                if not task.done():
                    task.cancel()
                try:
                    result = await task
                except asyncio.CancelledError:
                    cancelled += 1
                    continue
                if isinstance(result, dict):
                    seen.extend(record.offset for records in result.values() for record in records)
                elif result is not None:
                    seen.append(result.offset)
            await writer
            return seen, cancelled

    seen, cancelled = asyncio.run(main())
    assert cancelled > 20
    assert seen == list(range(total))


def _trickle(bootstrap: str, topic: str, total: int) -> None:
    """librdkafka writes `total` records in chunks of 20, 20 ms apart, so polls often wait."""
    for start in range(0, total, 20):
        produce_with_librdkafka(bootstrap, topic, [b"%d" % index for index in range(start, start + 20)])
        time.sleep(0.02)


async def _next_record(consumer: Consumer):
    async for record in consumer:
        return record
    return None


def test_cancelled_requests_leave_connections_clean(peer, topic_factory):
    """ListOffsets, commits and metadata requests cancelled before, while and after they are
    written: each connection ends with no request in flight, and the next answers are the right
    ones (a response matched to the wrong request would fail decoding or give wrong offsets)."""
    topic = topic_factory()
    produce_with_librdkafka(peer.bootstrap, topic, [b"x"] * 5)
    group = f"g-{uuid.uuid4().hex[:6]}"

    async def main() -> None:
        rng = random.Random(11)
        async with AdminClient(bootstrap_servers=peer.bootstrap) as admin, \
                Consumer(bootstrap_servers=peer.bootstrap, group_id=group) as consumer:
            consumer.assign([(topic, 0)])
            end = (await admin.list_offsets({(topic, 0): OffsetSpec.latest()}))[(topic, 0)].offset
            for round_ in range(30):
                calls = [
                    admin.list_offsets({(topic, 0): OffsetSpec.latest()}),
                    admin.describe_cluster(),
                    consumer.commit({(topic, 0): round_}),
                    consumer.end_offsets([(topic, 0)]),
                ]
                tasks = [asyncio.ensure_future(call) for call in calls]
                await asyncio.sleep(rng.choice([0, 0.0002, 0.001]))
                for task in tasks:
                    if rng.random() < 0.7:
                        task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            await consumer.commit({(topic, 0): 3})
            assert (await admin.list_offsets({(topic, 0): OffsetSpec.latest()}))[(topic, 0)].offset == end
            assert await consumer.end_offsets([(topic, 0)]) == {TopicPartition(topic, 0): end}
            assert (await consumer.committed([(topic, 0)]))[TopicPartition(topic, 0)].offset == 3
            for client in (admin, consumer):
                connections = [state.connection for state in client._network._nodes.values()
                               if state.connection is not None]
                assert connections and all(not connection.closed for connection in connections)
                async with asyncio.timeout(5):
                    while any(connection.in_flight for connection in connections):
                        await asyncio.sleep(0.01)

    asyncio.run(main())
