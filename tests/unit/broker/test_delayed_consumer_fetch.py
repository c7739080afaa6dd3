"""A consumer's waiting fetch, as Kafka's DelayedFetch: each move of the high watermark is checked
by counting bytes from log positions, the fetch stays parked while they are short of min_bytes,
and its partitions are read once, when it is due (enough bytes, or its max wait). The broker's
own PartitionHost wiring (`hosted_node.Node`) delivers the high watermark's moves; a spy counts
the reads."""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import BrokerContext, BrokerServices, fetch
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, PartitionChangeRecord, RequestHeader
from gregor.replication.partition import READ_COMMITTED, Partition
from gregor.storage.log import Log

from tests.unit.broker.hosted_node import A, Node
from tests.unit.storage.helpers import NOW, batch, records_of

VERSION = 13


class _Events:
    def fetched(self, sizes) -> None:
        pass


def _fetch(node: Node, min_bytes: int, max_wait_ms: int, offset: int = 0, leader_epoch: int = -1):
    header = RequestHeader(request_api_key=fetch.API_KEY, request_api_version=VERSION, correlation_id=1)
    services = BrokerServices(partitions=node.partitions, metadata=node.metadata, controller=None, groups=None,
                              metrics=_Events(), shares=None)
    context = BrokerContext(services, header, None, {}, NOW)
    request = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, topics=[
        FetchRequest.FetchTopic(topic_id=A, partitions=[FetchRequest.FetchPartition(
            partition=0, current_leader_epoch=leader_epoch, fetch_offset=offset, partition_max_bytes=1 << 20)])])
    return fetch.handle(context, request)


def _values(response) -> list[bytes]:
    (topic,) = response.responses
    (partition,) = topic.partitions
    return [value.split(b"-")[0] for _, value in records_of(bytes(partition.records or b""))]


class _Spy:
    """Counts the partition reads and the log reads under them."""

    def __init__(self, monkeypatch) -> None:
        self.partition_reads = self.log_reads = 0
        read_records, log_read = Partition.read_records, Log.read

        def counted_read_records(partition, *args, **kwargs):
            self.partition_reads += 1
            return read_records(partition, *args, **kwargs)

        def counted_log_read(log, *args, **kwargs):
            self.log_reads += 1
            return log_read(log, *args, **kwargs)

        monkeypatch.setattr(Partition, "read_records", counted_read_records)
        monkeypatch.setattr(Log, "read", counted_log_read)

    def reset(self) -> None:
        self.partition_reads = self.log_reads = 0


def test_a_fetch_short_of_min_bytes_stays_parked_across_small_appends_and_is_read_once_when_enough(
        tmp_path, monkeypatch):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        leader = node.partitions.partition("a", 0)
        one = len(batch(1, tag=b"r0"))
        spy = _Spy(monkeypatch)
        waiting = _fetch(node, min_bytes=3 * one, max_wait_ms=60_000)
        assert asyncio.isfuture(waiting), "nothing to send yet: the fetch waits"
        task = asyncio.ensure_future(waiting)
        await asyncio.sleep(0)
        spy.reset()
        for i in range(2):
            leader.append_as_leader(batch(1, tag=b"r%d" % i), NOW)  # one replica: the high watermark moves
            await asyncio.sleep(0)
            assert not task.done() and len(node.partitions.consumer_fetches) == 1
        assert (spy.partition_reads, spy.log_reads) == (0, 0), "the wake-ups counted bytes, read nothing"
        leader.append_as_leader(batch(1, tag=b"r2"), NOW)
        response = await asyncio.wait_for(task, 5)
        assert _values(response) == [b"r0", b"r1", b"r2"]
        assert (spy.partition_reads, spy.log_reads) == (1, 1), "read once, when it was due"
        await node.partitions.close()
    asyncio.run(run())


def test_a_fetch_that_never_gets_enough_is_read_once_at_its_max_wait(tmp_path, monkeypatch):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        leader = node.partitions.partition("a", 0)
        spy = _Spy(monkeypatch)
        task = asyncio.ensure_future(_fetch(node, min_bytes=1 << 20, max_wait_ms=150))
        await asyncio.sleep(0)
        spy.reset()
        for i in range(3):
            leader.append_as_leader(batch(1, tag=b"r%d" % i), NOW)
        await asyncio.sleep(0.02)
        assert not task.done() and spy.partition_reads == 0
        response = await asyncio.wait_for(task, 5)
        assert _values(response) == [b"r0", b"r1", b"r2"] and spy.partition_reads == 1
        await node.partitions.close()
    asyncio.run(run())


def test_a_caught_up_fetch_behind_the_log_end_counts_only_what_the_high_watermark_passed(tmp_path):
    """Two replicas: records appended but not yet replicated are below the log end and above the
    high watermark, so they do not make a consumer's fetch due."""
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, replicas=[1, 2], isr=[1, 2]))
        leader = node.partitions.partition("a", 0)
        task = asyncio.ensure_future(_fetch(node, min_bytes=1, max_wait_ms=60_000))
        await asyncio.sleep(0)
        leader.append_as_leader(batch(1, tag=b"r0"), NOW)
        node.partitions.consumer_fetches.check(("a", 0))  # as a high watermark move would
        await asyncio.sleep(0)
        assert not task.done(), "the follower has not fetched it: the high watermark did not pass it"
        request = FetchRequest.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=1,
                                              partition_max_bytes=1 << 20)
        node.partitions.apply(leader, leader.fetch_for_follower(2, request, NOW)[1])
        assert _values(await asyncio.wait_for(task, 5)) == [b"r0"]
        await node.partitions.close()
    asyncio.run(run())


def test_a_caught_up_fetch_parks_without_reading_and_reads_once_when_records_come(tmp_path, monkeypatch):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        leader = node.partitions.partition("a", 0)
        spy = _Spy(monkeypatch)
        waiting = _fetch(node, min_bytes=1, max_wait_ms=60_000, leader_epoch=leader.leader_epoch)
        assert asyncio.isfuture(waiting) and (spy.partition_reads, spy.log_reads) == (0, 0)
        leader.append_as_leader(batch(1, tag=b"r0"), NOW)
        response = await asyncio.wait_for(waiting, 5)
        assert _values(response) == [b"r0"] and spy.partition_reads == 1
        await node.partitions.close()
    asyncio.run(run())


def test_a_fetch_with_records_below_the_high_watermark_or_an_error_is_answered_at_once(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        leader = node.partitions.partition("a", 0)
        leader.append_as_leader(batch(1, tag=b"r0"), NOW)
        assert _values(_fetch(node, min_bytes=1, max_wait_ms=60_000)) == [b"r0"]
        for offset, epoch, code in ((1, leader.leader_epoch + 1, ErrorCode.UNKNOWN_LEADER_EPOCH),
                                    (5, -1, ErrorCode.OFFSET_OUT_OF_RANGE), (-1, -1, ErrorCode.OFFSET_OUT_OF_RANGE)):
            answer = _fetch(node, min_bytes=1, max_wait_ms=60_000, offset=offset, leader_epoch=epoch)
            assert not asyncio.isfuture(answer), f"offset {offset}, epoch {epoch}: answered, not parked"
            assert answer.responses[0].partitions[0].error_code == code
        assert len(node.partitions.consumer_fetches) == 0
        await node.partitions.close()
    asyncio.run(run())


def test_only_a_fetch_at_the_read_limit_of_a_leader_reads_nothing(tmp_path):
    """`Partition.consumer_read_is_empty`, which lets a caught-up fetch park unread, against the
    read it stands for: the high watermark (the last stable offset for read_committed) is the
    limit, on the leader of the epoch asked for."""
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, replicas=[1, 2], isr=[1, 2]))
        leader = node.partitions.partition("a", 0)
        leader.append_as_leader(batch(1, tag=b"r0"), NOW)  # above the high watermark: 2 replicas
        epoch = leader.leader_epoch
        assert leader.high_watermark == 0 and leader.log.log_end_offset == 1
        assert leader.consumer_read_is_empty(0) and leader.consumer_read_is_empty(0, epoch, READ_COMMITTED)
        assert not leader.read_records(0, 1 << 20).slices
        assert not leader.consumer_read_is_empty(1), "between the high watermark and the log end"
        assert not leader.consumer_read_is_empty(0, epoch + 1), "a newer epoch than this leader's"
        node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, leader=2))
        follower = node.partitions.partition("a", 0)
        assert not follower.is_leader and not follower.consumer_read_is_empty(0)
        await node.partitions.close()
    asyncio.run(run())
