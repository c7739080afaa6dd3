"""The share coordinator's side of a share-partition's state, over the wire of one in-process
broker: InitializeShareGroupState, WriteShareGroupState and ReadShareGroupState with state-epoch
fencing (FENCED_STATE_EPOCH, as Kafka's share coordinator), ReadShareGroupStateSummary, and
DeleteShareGroupState; what was written is what a fresh load of `__share_group_state` reads; a
share-partition loaded before its state was re-initialized is fenced by its next write and loads
the new state; a share-partition's lag and in-flight records are Prometheus gauges."""

from __future__ import annotations

import asyncio

from gregor.broker.config import BrokerConfig
from gregor.broker.server import Broker
from gregor.coordinator.share.share_partition import Acknowledgement
from gregor.metrics.broker_metrics import BrokerMetrics
from gregor.protocol.error_codes import ErrorCode as E
from gregor.protocol.messages import (
    CreateTopicsRequest, DeleteShareGroupStateRequest, InitializeShareGroupStateRequest, ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest, WriteShareGroupStateRequest,
)
from gregor.records.record import BatchBuilder
from tests.unit.broker.test_authorization_matrix import Node

ADMIN = "User:ANONYMOUS"
GROUP = "queue"


async def _started(tmp_path) -> tuple[Broker, Node]:
    broker = Broker(BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                                  "offsets.topic.num.partitions": "1",
                                  "share.coordinator.state.topic.num.partitions": "1",
                                  "share.auto.offset.reset": "earliest"}))
    await broker.start()
    node = Node(broker)
    created = await node.call(ADMIN, CreateTopicsRequest(timeout_ms=5000, topics=[
        CreateTopicsRequest.CreatableTopic(name="t", num_partitions=1, replication_factor=1)]), 5)
    assert created.topics[0].error_code == 0
    await broker.shares.store.ensure_topic()
    for _ in range(200):
        state = broker.partitions.partition("__share_group_state", 0)
        if state is not None and state.is_leader and broker.partitions.partition("t", 0) is not None:
            break
        await asyncio.sleep(0.01)
    return broker, node


def _initialize(topic_id, epoch: int, start: int) -> InitializeShareGroupStateRequest:
    request = InitializeShareGroupStateRequest
    return request(group_id=GROUP, topics=[request.InitializeStateData(topic_id=topic_id, partitions=[
        request.PartitionData(partition=0, state_epoch=epoch, start_offset=start)])])


def _write(topic_id, epoch: int, start: int) -> WriteShareGroupStateRequest:
    return WriteShareGroupStateRequest(group_id=GROUP, topics=[WriteShareGroupStateRequest.WriteStateData(
        topic_id=topic_id, partitions=[WriteShareGroupStateRequest.PartitionData(
            partition=0, state_epoch=epoch, leader_epoch=0, start_offset=start, state_batches=[
                WriteShareGroupStateRequest.StateBatch(first_offset=start, last_offset=start + 1, delivery_state=0,
                                                       delivery_count=2)])])])


def _summary(topic_id) -> ReadShareGroupStateSummaryRequest:
    return ReadShareGroupStateSummaryRequest(group_id=GROUP, topics=[
        ReadShareGroupStateSummaryRequest.ReadStateSummaryData(topic_id=topic_id, partitions=[
            ReadShareGroupStateSummaryRequest.PartitionData(partition=0, leader_epoch=0)])])


def _read(topic_id) -> ReadShareGroupStateRequest:
    return ReadShareGroupStateRequest(group_id=GROUP, topics=[ReadShareGroupStateRequest.ReadStateData(
        topic_id=topic_id, partitions=[ReadShareGroupStateRequest.PartitionData(partition=0, leader_epoch=0)])])


def _delete(topic_id) -> DeleteShareGroupStateRequest:
    return DeleteShareGroupStateRequest(group_id=GROUP, topics=[DeleteShareGroupStateRequest.DeleteStateData(
        topic_id=topic_id, partitions=[DeleteShareGroupStateRequest.PartitionData(partition=0)])])


def _code(response) -> int:
    return response.results[0].partitions[0].error_code


async def _state_apis(tmp_path) -> None:
    broker, node = await _started(tmp_path)
    try:
        # share.coordinator.state.topic.min.isr (default 2) capped to the one broker's replication factor
        assert broker.metadata.image.topic_config("__share_group_state")["min.insync.replicas"] == "1"
        topic_id = broker.metadata.image.topics["t"].topic_id

        async def summary() -> tuple[int, int, int]:
            found = (await node.call(ADMIN, _summary(topic_id), 0)).results[0].partitions[0]
            return found.error_code, found.start_offset, found.state_epoch

        assert await summary() == (0, -1, 0)
        assert _code(await node.call(ADMIN, _write(topic_id, 0, 5), 0)) == 0
        assert await summary() == (0, 5, 0)
        assert _code(await node.call(ADMIN, _initialize(topic_id, 1, 10), 0)) == 0
        assert _code(await node.call(ADMIN, _write(topic_id, 0, 7), 0)) == E.FENCED_STATE_EPOCH
        assert _code(await node.call(ADMIN, _initialize(topic_id, 0, 3), 0)) == E.FENCED_STATE_EPOCH
        read = (await node.call(ADMIN, _read(topic_id), 0)).results[0].partitions[0]
        assert (read.error_code, read.start_offset, read.state_epoch, read.state_batches) == (0, 10, 1, [])
        assert _code(await node.call(ADMIN, _write(topic_id, 1, 12), 0)) == 0
        assert await summary() == (0, 12, 1)
        broker.shares.store._loaded.clear()  # read back from the log
        read = (await node.call(ADMIN, _read(topic_id), 0)).results[0].partitions[0]
        assert (read.start_offset, read.state_epoch) == (12, 1)
        assert [(b.first_offset, b.last_offset, b.delivery_count) for b in read.state_batches] == [(12, 13, 2)]
        assert _code(await node.call(ADMIN, _delete(topic_id), 0)) == 0
        assert await summary() == (0, -1, 0)
        assert _code(await node.call(ADMIN, _delete(topic_id), 0)) == 0
        broker.shares.store._loaded.clear()
        assert await summary() == (0, -1, 0)
    finally:
        await broker.stop()


def test_state_apis_fence_older_state_epochs_and_delete_state(tmp_path):
    asyncio.run(_state_apis(tmp_path))


async def _fenced_share_partition(tmp_path) -> None:
    broker, _ = await _started(tmp_path)
    try:
        shares = broker.shares
        partition = broker.partitions.partition("t", 0)
        assert partition is not None
        builder = BatchBuilder()
        for i in range(6):
            builder.append(0, None, b"v%d" % i)
        info = partition.append_as_leader(memoryview(builder.build()), broker.clock(), 1)
        broker.partitions.on_leader_append(partition, [])
        assert info is not None and partition.high_watermark == 6
        share = await shares.load(GROUP, "t", partition)
        assert share.state_epoch == 0 and share.start_offset == 0
        topic_id = broker.metadata.image.topics["t"].topic_id
        assert await shares.store.initialize((GROUP, topic_id, 0), 1, 4) == E.NONE
        got = shares.acquire(GROUP, "m", "t", partition, 10, 1 << 20)
        assert got.ranges  # acquired from the state loaded before the change ...
        assert await shares.settle() == [E.FENCED_STATE_EPOCH]  # ... whose write is fenced
        assert not shares.holds(GROUP, "t", 0, share) and shares.loaded(GROUP, "t", partition) is None
        reloaded = await shares.load(GROUP, "t", partition)
        assert (reloaded.state_epoch, reloaded.start_offset) == (1, 4)
        again = shares.acquire(GROUP, "m", "t", partition, 10, 1 << 20)
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in again.ranges] == [(4, 5, 1)]
        assert await shares.settle() == [E.NONE]
    finally:
        await broker.stop()


def test_a_share_partition_loaded_before_its_state_was_reinitialized_is_fenced(tmp_path):
    asyncio.run(_fenced_share_partition(tmp_path))


async def _share_metrics(tmp_path) -> dict[tuple[str, str], float]:
    broker, _ = await _started(tmp_path)
    try:
        shares = broker.shares
        partition = broker.partitions.partition("t", 0)
        assert partition is not None
        for size in (6, 4):  # two batches: a share-partition acquires whole batches
            builder = BatchBuilder()
            for i in range(size):
                builder.append(0, None, b"v%d" % i)
            partition.append_as_leader(memoryview(builder.build()), broker.clock(), 1)
        broker.partitions.on_leader_append(partition, [])
        await shares.load(GROUP, "t", partition)
        assert shares.acquire(GROUP, "m", "t", partition, 6, 1 << 20).ranges  # offsets 0-5 acquired
        assert shares.acknowledge(GROUP, "m", "t", partition, [Acknowledgement(0, 3, (1,))]) == E.NONE
        await shares.settle()
        metrics = BrokerMetrics()
        metrics.watch(broker.scrape_state)
        samples = {(family.name, sample.labels.get("group", "")): sample.value
                   for family in metrics.registry.collect() for sample in family.samples
                   if sample.labels.get("topic") == "t"}
        return samples
    finally:
        await broker.stop()


def test_share_partition_lag_and_in_flight_records_are_metrics(tmp_path):
    samples = asyncio.run(_share_metrics(tmp_path))
    # start offset 4 (0-3 accepted) of 10 records; 4 and 5 acquired, tracked until acknowledged
    assert samples[("kafka_sharegroup_lag", GROUP)] == 6
    assert samples[("kafka_server_sharepartitionmetrics_inflightmessagecount", GROUP)] == 2
    assert samples[("gregor_sharepartition_acquired_records", GROUP)] == 2
