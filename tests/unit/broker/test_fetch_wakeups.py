"""Long-polling fetches and the events that should end them.

A waiting fetch's answer comes a loop iteration or more after the handler's read; an append in
that gap must still end the wait at once rather than leave the fetch sleeping out max_wait_ms
(for a follower, that held every acks=all produce behind it). Both kinds park in their purgatory
in the same step as their read, so nothing falls in the gap: a follower's is woken by appends
(not by high-watermark moves), a consumer's by high-watermark moves that give it enough bytes,
either by its max wait.
"""

from __future__ import annotations

import asyncio

import pytest

from gregor.broker.config import BrokerConfig
from gregor.broker.fetch_purgatory import FetchPurgatory
from gregor.broker.handlers import BrokerContext, BrokerServices, fetch
from gregor.broker.handlers.replica_fetch import handle_replica_fetch
from gregor.broker.network import ConnectionInfo
from gregor.protocol.messages import FetchRequest, RequestHeader
from gregor.replication.fetch_sessions import FetchSessions

from tests.unit.replication.helpers import TOPIC_ID, Replica

LONG_POLL_MS = 60_000
KEY = ("t", 0)


class _Events:
    def fetched(self, bytes_by_topic) -> None:
        pass


class _Partitions:
    """The PartitionHost the fetch handlers read: one hosted partition and the waiters."""

    def __init__(self, replica: Replica) -> None:
        self.replica = replica
        self.consumer_fetches = FetchPurgatory()
        self.replica_fetches = FetchPurgatory()
        self.fetch_sessions = FetchSessions()
        self.max_uncompressed_bytes = 1 << 20

    def partition(self, topic: str, index: int):
        return self.replica.partition if (topic, index) == KEY else None

    def apply(self, partition, effects) -> None:
        self.replica.outbox += effects


class _Metadata:
    config = BrokerConfig()  # its one listener, PLAINTEXT, is the inter-broker one: followers may fetch

    def topic_name(self, topic_id):
        return "t" if topic_id == TOPIC_ID else None


def _context(partitions: _Partitions, version: int) -> BrokerContext:
    header = RequestHeader(request_api_key=fetch.API_KEY, request_api_version=version, correlation_id=1)
    # fetches reach neither the controller nor the group coordinator
    services = BrokerServices(partitions=partitions, metadata=_Metadata(), controller=None, groups=None,
                              metrics=_Events(), shares=None)
    connection = ConnectionInfo("127.0.0.1:5555", "PLAINTEXT", 1)
    return BrokerContext(services, header, connection, {}, partitions.consumer_fetches.now_ms())


def _fetch(offset: int, replica_id: int, version: int) -> FetchRequest:
    partition = FetchRequest.FetchPartition(partition=0, current_leader_epoch=0, fetch_offset=offset,
                                            partition_max_bytes=1 << 20)
    topic = FetchRequest.FetchTopic(topic_id=TOPIC_ID, partitions=[partition]) if version >= 13 else \
        FetchRequest.FetchTopic(topic="t", partitions=[partition])
    return FetchRequest(replica_id=replica_id, max_wait_ms=LONG_POLL_MS, min_bytes=1, topics=[topic])


def _records(response) -> bytes:
    (topic,) = response.responses
    (partition,) = topic.partitions
    return bytes(partition.records or b"")


def _leader(tmp_path, replicas: tuple[int, ...]) -> Replica:
    leader = Replica(tmp_path, 1, replicas=replicas)
    leader.apply(1, 0, replicas, 0)
    leader.produce(b"first", acks=1)
    return leader


async def _append_in_the_gap(partitions: _Partitions, waiting) -> bytes:
    """Append (and check the purgatories, as the broker does: followers' on the append, consumers'
    on the high watermark's move) before the waiting fetch first runs."""
    task = asyncio.ensure_future(waiting)
    partitions.replica.produce(b"second", acks=1)
    partitions.replica_fetches.check(KEY)
    partitions.consumer_fetches.check(KEY)
    return _records(await asyncio.wait_for(task, LONG_POLL_MS / 1000 / 4))


def test_a_follower_fetch_sees_an_append_made_before_it_started_waiting(tmp_path):
    async def run() -> bytes:
        partitions = _Partitions(_leader(tmp_path, (1, 2)))
        waiting = handle_replica_fetch(_context(partitions, 13), _fetch(1, 2, 13), 2)
        assert asyncio.isfuture(waiting), "nothing to send yet: the fetch waits"
        assert len(partitions.replica_fetches) == 1, "parked in the same step as its read"
        return await _append_in_the_gap(partitions, waiting)
    assert b"second" in asyncio.run(run())


def test_a_follower_fetch_waits_for_records_not_for_the_high_watermark_then_for_its_max_wait(tmp_path):
    async def run() -> None:
        partitions = _Partitions(_leader(tmp_path, (1, 2)))
        request = _fetch(1, 2, 13)
        request.max_wait_ms = 200
        task = asyncio.ensure_future(handle_replica_fetch(_context(partitions, 13), request, 2))
        partitions.consumer_fetches.check(KEY)  # the high watermark moved: not what a follower waits for
        await asyncio.sleep(0.05)
        assert not task.done()
        response = await asyncio.wait_for(task, 5)
        assert _records(response) == b"" and len(partitions.replica_fetches) == 0
    asyncio.run(run())


@pytest.mark.parametrize("version", [12, 13])
def test_a_consumer_fetch_sees_an_append_made_before_it_started_waiting(tmp_path, version):
    async def run() -> bytes:
        partitions = _Partitions(_leader(tmp_path, (1,)))
        waiting = fetch.handle(_context(partitions, version), _fetch(1, -1, version))
        assert asyncio.isfuture(waiting), "nothing to send yet: the fetch waits"
        assert len(partitions.consumer_fetches) == 1, "parked in the same step as its read"
        return await _append_in_the_gap(partitions, waiting)
    assert b"second" in asyncio.run(run())


def test_a_consumer_fetch_short_of_min_bytes_stays_parked_then_answers_at_its_max_wait(tmp_path):
    async def run() -> None:
        partitions = _Partitions(_leader(tmp_path, (1,)))
        request = _fetch(1, -1, 13)
        request.min_bytes, request.max_wait_ms = 1 << 20, 200
        task = asyncio.ensure_future(fetch.handle(_context(partitions, 13), request))
        await asyncio.sleep(0)
        partitions.replica.produce(b"second", acks=1)
        partitions.consumer_fetches.check(KEY)
        await asyncio.sleep(0.05)
        assert not task.done() and len(partitions.consumer_fetches) == 1, "too little yet: still parked"
        assert b"second" in _records(await asyncio.wait_for(task, 5))
    asyncio.run(run())
