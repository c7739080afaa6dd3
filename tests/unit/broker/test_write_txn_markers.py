"""WriteTxnMarkers through the handler, over broker 1's real partitions (`hosted_node.Node`): a
read_committed fetch parked at an open transaction is answered when the COMMIT marker lands (the
purgatory checks it on the high watermark's move, which moves the last stable offset); markers on
`__consumer_offsets` reach the group coordinator's seam once replicated; a request from a client
listener is refused; a partition led elsewhere answers NOT_LEADER_OR_FOLLOWER."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

from gregor.broker.handlers import BrokerContext, BrokerServices, fetch, write_txn_markers
from gregor.broker.network import ConnectionInfo, Pipelined
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, RequestHeader, TopicRecord, WriteTxnMarkersRequest
from gregor.records.batch import scan_batches

from tests.txn_wire import READ_COMMITTED, batch
from tests.unit.broker.hosted_node import A, Node, partition_record
from tests.unit.storage.helpers import NOW, records_of

OFFSETS = uuid.UUID(int=3)
PRODUCER = 77


class _Events:
    def fetched(self, sizes) -> None:
        pass


def _context(node: Node, api_key: int, version: int, listener: str = "PLAINTEXT", completed=None) -> BrokerContext:
    """The services these handlers use; the other required ones None, those with defaults left so."""
    header = RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=1)
    given = {"partitions": node.partitions, "metadata": node.metadata, "metrics": _Events(),
             "transaction_completed": completed}
    services = BrokerServices(**{field.name: given.get(field.name) for field in dataclasses.fields(BrokerServices)
                                 if field.name in given or field.default is dataclasses.MISSING})
    return BrokerContext(services, header, ConnectionInfo("peer", listener, 1), {}, NOW)


def _markers(node: Node, commit: bool, partitions: dict[str, list[int]], listener: str = "PLAINTEXT",
             completed=None):
    request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=PRODUCER, producer_epoch=0, transaction_result=commit, coordinator_epoch=1,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=name, partition_indexes=indexes)
                for name, indexes in partitions.items()])])
    return write_txn_markers.handle(_context(node, write_txn_markers.API_KEY, 1, listener, completed), request)


async def _answer(response) -> dict[tuple[str, int], ErrorCode]:
    if isinstance(response, Pipelined):
        response = await asyncio.wait_for(response.awaitable, 5)
    return {(topic.name, p.partition_index): ErrorCode(p.error_code)
            for marker in response.markers for topic in marker.topics for p in topic.partitions}


def test_a_parked_read_committed_fetch_is_answered_when_the_commit_lands(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        leader = node.partitions.partition("a", 0)
        leader.append_as_leader(batch([b"t0", b"t1"], PRODUCER, 0, 0), NOW)
        request = FetchRequest(replica_id=-1, max_wait_ms=60_000, min_bytes=1, isolation_level=READ_COMMITTED,
                               topics=[FetchRequest.FetchTopic(topic_id=A, partitions=[FetchRequest.FetchPartition(
                                   partition=0, current_leader_epoch=-1, fetch_offset=0,
                                   partition_max_bytes=1 << 20)])])
        waiting = fetch.handle(_context(node, fetch.API_KEY, 13), request)
        assert asyncio.isfuture(waiting), "the open transaction holds the last stable offset at 0"
        task = asyncio.ensure_future(waiting)
        await asyncio.sleep(0)
        assert not task.done() and len(node.partitions.consumer_fetches) == 1
        assert await _answer(_markers(node, True, {"a": [0]})) == {("a", 0): ErrorCode.NONE}
        response = await asyncio.wait_for(task, 5)
        (partition,) = response.responses[0].partitions
        assert partition.last_stable_offset == partition.high_watermark == 3
        assert [value for _, value in records_of(bytes(partition.records))][:2] == [b"t0", b"t1"]
        assert [header.is_control for header, _ in scan_batches(bytes(partition.records))[0]] == [False, True]
        await node.partitions.close()
    asyncio.run(run())


def test_markers_on_consumer_offsets_reach_the_group_coordinator_seam(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        node.publish(TopicRecord(name="__consumer_offsets", topic_id=OFFSETS), partition_record(OFFSETS, 0, [1]))
        completed: list[tuple[int, int, bool]] = []
        answer = await _answer(_markers(node, False, {"__consumer_offsets": [0], "a": [0]},
                                        completed=lambda *args: completed.append(args)))
        assert answer == {("__consumer_offsets", 0): ErrorCode.NONE, ("a", 0): ErrorCode.NONE}
        assert completed == [(PRODUCER, 0, False)], "only the __consumer_offsets partition is reported"
        await node.partitions.close()
    asyncio.run(run())


def test_refusals(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        refused = await _answer(_markers(node, True, {"a": [0, 1]}, listener="CLIENTS"))
        assert refused == {("a", 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                           ("a", 1): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        answer = await _answer(_markers(node, True, {"a": [1], "b": [0], "c": [0]}))
        assert answer == {("a", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER, ("b", 0): ErrorCode.NOT_LEADER_OR_FOLLOWER,
                          ("c", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}, "b-0 is hosted by broker 2 only"
        await node.partitions.close()
    asyncio.run(run())
