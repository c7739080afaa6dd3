"""Long-polling fetches and the appends that should end them.

The network layer runs a waiting fetch as a task, which starts a loop iteration after the
handler's first read; an append in that gap notifies nobody. The fetch must still see it at once
rather than sleep out max_wait_ms (for a follower, that held every acks=all produce behind it).
"""

from __future__ import annotations

import asyncio

import pytest

from gregor.broker.handlers import fetch
from gregor.broker.handlers.replica_fetch import handle_replica_fetch
from gregor.protocol.messages import FetchRequest
from gregor.replication.waiters import PartitionWaiters

from tests.unit.replication.helpers import TOPIC_ID, Replica

LONG_POLL_MS = 60_000
KEY = ("t", 0)


class _Events:
    def fetched(self, bytes_by_topic) -> None:
        pass


class _Replicas:
    def __init__(self, replica: Replica) -> None:
        self.replica = replica

    def apply(self, partition, effects) -> None:
        self.replica.outbox += effects


class _Broker:
    """What the fetch handlers read of a broker: one hosted partition and the waiters."""

    def __init__(self, replica: Replica) -> None:
        self.replica = replica
        self.fetch_waiters = PartitionWaiters()
        self.events = _Events()
        self.replicas = _Replicas(replica)

    def partition(self, topic: str, index: int):
        return self.replica.partition if (topic, index) == KEY else None

    def topic_name(self, topic_id):
        return "t" if topic_id == TOPIC_ID else None


class _Header:
    def __init__(self, version: int) -> None:
        self.request_api_version = version


class _Context:
    def __init__(self, broker: _Broker, version: int) -> None:
        self.broker = broker
        self.header = _Header(version)
        self.now_ms = 0

    @property
    def version(self) -> int:
        return self.header.request_api_version


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


async def _append_in_the_gap(broker: _Broker, waiting) -> bytes:
    """Append (and notify, as the produce handler does) before the waiting fetch first runs."""
    task = asyncio.ensure_future(waiting)
    broker.replica.produce(b"second", acks=1)
    broker.fetch_waiters.notify(KEY)
    return _records(await asyncio.wait_for(task, LONG_POLL_MS / 1000 / 4))


def test_a_follower_fetch_sees_an_append_made_before_it_started_waiting(tmp_path):
    leader = _leader(tmp_path, (1, 2))
    broker = _Broker(leader)
    waiting = handle_replica_fetch(_Context(broker, 13), _fetch(1, 2, 13), 2)
    assert asyncio.iscoroutine(waiting), "nothing to send yet: the fetch waits"
    assert b"second" in asyncio.run(_append_in_the_gap(broker, waiting))


@pytest.mark.parametrize("version", [12, 13])
def test_a_consumer_fetch_sees_an_append_made_before_it_started_waiting(tmp_path, version):
    leader = _leader(tmp_path, (1,))
    broker = _Broker(leader)
    waiting = fetch.handle(_Context(broker, version), _fetch(1, -1, version))
    assert asyncio.iscoroutine(waiting), "nothing to send yet: the fetch waits"
    assert b"second" in asyncio.run(_append_in_the_gap(broker, waiting))
