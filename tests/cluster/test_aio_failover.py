"""gregor.aio through leader changes of a replication-factor-3 partition on a 3-broker Gregor
cluster, as the sync client and third-party clients in test_client_failover: the leader is
killed (-9) between two rounds of sends of one async producer (idempotent, up to 5 requests in
flight), which must find the new leader, and the next leader while the async consumer reads in a
group; every acknowledged record is read back, in order. Then the leader is killed while the
producer has records in flight: every one is acknowledged, and read back once each, in order
(retries through the new leader, deduplicated by idempotence). The clients live on one event
loop in a thread of the test, so the producer keeps its (stale) metadata across the kills."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gregor.aio import Consumer, Producer
from tests.cluster.test_client_failover import cluster, kill_leader, scenario  # noqa: F401 - `cluster` is a fixture

pytestmark = pytest.mark.slow

THIRD = range(300, 600)


def test_gregor_aio_client(cluster):  # noqa: F811 - the imported fixture
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever)
    thread.start()

    def run(coro, timeout: float = 120):
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    async def make_producer() -> Producer:
        producer = Producer(bootstrap_servers=cluster.bootstrap, acks="all", enable_idempotence=True,
                            max_in_flight_requests_per_connection=5, linger_ms=2, batch_size=200,
                            metadata_max_age_ms=60_000)
        await producer.start()
        return producer

    producer = run(make_producer())

    async def send_all(values: range) -> None:
        futures = [await producer.enqueue("ga", str(value).encode()) for value in values]
        offsets = [metadata.offset for metadata in await asyncio.wait_for(asyncio.gather(*futures), 60)]
        assert offsets == sorted(offsets)

    async def read_all(count: int, midway) -> list[int]:
        values: list[int] = []
        async with Consumer(bootstrap_servers=cluster.bootstrap, group_id="ga", auto_offset_reset="earliest",
                            metadata_max_age_ms=1000) as consumer:
            consumer.subscribe(["ga"])
            deadline = time.monotonic() + 90
            while len(set(values)) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                values.extend(int(record.value) for records in batches.values() for record in records)
                if len(values) >= count // 2 and not getattr(midway, "done", False):
                    midway.done = True
                    await asyncio.get_running_loop().run_in_executor(None, midway)
        return values

    async def send_while_killing(values: range) -> list[int]:
        futures = []
        for value in values:
            futures.append(await producer.enqueue("ga", str(value).encode()))
            if value == values[len(values) // 3]:
                await asyncio.wait_for(asyncio.gather(*futures), 30)
                killer = asyncio.get_running_loop().run_in_executor(None, kill_leader, cluster, "ga")
            await asyncio.sleep(0.002)  # records keep going out while the leader dies
        killed = await killer
        offsets = [metadata.offset for metadata in await asyncio.wait_for(asyncio.gather(*futures), 90)]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
        return [killed, offsets[0]]

    async def read_from(offset: int, count: int) -> list[int]:
        async with Consumer(bootstrap_servers=cluster.bootstrap, metadata_max_age_ms=1000) as consumer:
            consumer.assign([("ga", 0)])
            consumer.seek(("ga", 0), offset)
            values: list[int] = []
            deadline = time.monotonic() + 60
            while len(values) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                values.extend(int(record.value) for records in batches.values() for record in records)
            await asyncio.sleep(0.5)
            batches = await consumer.getmany(timeout_ms=200)
            values.extend(int(record.value) for records in batches.values() for record in records)
            return values

    try:
        scenario(cluster, "ga", lambda values: run(send_all(values)),
                 lambda count, midway: run(read_all(count, midway)))
        killed, first_offset = run(send_while_killing(THIRD))
        assert run(read_from(first_offset, len(THIRD))) == list(THIRD)
        cluster.brokers[killed].restart()
    finally:
        run(producer.close(5))
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
