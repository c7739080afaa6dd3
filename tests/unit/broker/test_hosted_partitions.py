"""The broker's PartitionHost (HostedPartitions), MetadataView (BrokerMetadata) and the publisher
that applies committed images to them, driven directly with images replayed from metadata records
over real logs in a temporary log dir; the group coordinator is a fake that records its calls."""

from __future__ import annotations

import asyncio
import os
import uuid

from gregor.broker.broker_metadata import BrokerMetadata, log_config
from gregor.broker.config import BrokerConfig
from gregor.broker.events import BrokerEvents
from gregor.broker.hosted_partitions import HostedPartitions
from gregor.broker.log_maintenance import cleaner_config
from gregor.broker.metadata_publisher import BrokerMetadataPublisher
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import TOPIC_RESOURCE, MetadataImage
from gregor.protocol.messages import (
    ConfigRecord, PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord, RemoveTopicRecord, TopicRecord,
    UnfenceBrokerRecord,
)
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import batch

A = uuid.UUID(int=1)
B = uuid.UUID(int=2)


class _Groups:
    """The GroupRuntime side the publisher calls."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def sync_leadership(self) -> None:
        self.calls.append(("sync_leadership",))

    def forget_partitions(self, partitions) -> None:
        self.calls.append(("forget", sorted(partitions)))


class _Controller:
    async def send_to_controller(self, request, version, timeout_s):
        raise AssertionError("nothing here asks the controller")


def _partition(topic_id: uuid.UUID, index: int, replicas: list[int]) -> PartitionRecord:
    return PartitionRecord(partition_id=index, topic_id=topic_id, replicas=replicas, isr=list(replicas),
                           leader=replicas[0], leader_epoch=0, partition_epoch=0)


def _broker(broker_id: int, listener: str = "PLAINTEXT") -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=10,
                                end_points=[RegisterBrokerRecord.BrokerEndpoint(
                                    name=listener, host=f"h{broker_id}", port=9000 + broker_id, security_protocol=0)],
                                rack="r1", fenced=True)


class _Node:
    """Broker 1's metadata, partitions and publisher, as the composition root wires them."""

    def __init__(self, tmp_path) -> None:
        self.log_dir = str(tmp_path / "logs")
        self.config = BrokerConfig({"node.id": "1", "log.dirs": self.log_dir, "process.roles": "broker",
                                    "controller.quorum.voters": "9@127.0.0.1:9999"})
        self.metadata = BrokerMetadata(self.config)
        self.partitions = HostedPartitions(self.config, self.metadata, _Controller(), BrokerEvents())
        self.groups = _Groups()
        self.publisher = BrokerMetadataPublisher(self.metadata, self.partitions, self.groups)
        self.offset = 0

    def publish(self, *records) -> None:
        delta = MetadataDelta(self.metadata.image)
        for record in records:
            delta.replay(record, self.offset, 1)
            self.offset += 1
        self.publisher.on_metadata_update(delta, delta.apply())

    def start(self) -> None:
        """The root's order: the image caught up, then the logs loaded, then the publisher installed."""
        self.partitions.load_logs(cleaner_config(self.config))
        self.publish(_broker(1), _broker(2), UnfenceBrokerRecord(id=1, epoch=10), UnfenceBrokerRecord(id=2, epoch=10),
                     TopicRecord(name="a", topic_id=A), _partition(A, 0, [1]), _partition(A, 1, [2, 1]),
                     TopicRecord(name="b", topic_id=B), _partition(B, 0, [2]))

    def hosted(self) -> dict[tuple[str, int], str]:
        return {key: "leader" if partition.is_leader else f"follower of {partition.leader_id}"
                for key, partition in self.partitions.partitions.items()}

    def on_disk(self) -> set[str]:
        return {name for name in os.listdir(self.log_dir) if not name.startswith(".") and "-" in name
                and os.path.isdir(os.path.join(self.log_dir, name)) and not name.endswith("-delete")}


def test_the_first_image_hosts_this_brokers_replicas_and_deletes_the_logs_it_no_longer_names(tmp_path):
    async def run() -> None:
        node = _Node(tmp_path)
        Log(os.path.join(node.log_dir, "gone-0"), LogConfig(), 0).close()  # a topic deleted while it was down
        node.start()
        assert node.hosted() == {("a", 0): "leader", ("a", 1): "follower of 2"}
        assert node.on_disk() == {"a-0", "a-1"}
        assert node.groups.calls == [("sync_leadership",)]
        assert node.partitions.partition("a", 1) is node.partitions.partitions[("a", 1)]
        assert node.partitions.partition("b", 0) is None
        assert set(node.partitions.logs_in(node.log_dir)) == {("a", 0), ("a", 1)}
        await node.partitions.close()
    asyncio.run(run())


def test_a_leader_change_answers_every_fetch_parked_on_the_partition(tmp_path):
    async def run() -> None:
        node = _Node(tmp_path)
        node.start()
        far = node.partitions.consumer_fetches.now_ms() + 60_000
        consumer = node.partitions.consumer_fetches.park([("a", 0)], far)
        follower = node.partitions.replica_fetches.park([("a", 0)], far)
        elsewhere = node.partitions.consumer_fetches.park([("a", 1)], far)
        node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, leader=2, replicas=[1, 2], isr=[1, 2]))
        assert node.hosted()[("a", 0)] == "follower of 2"
        assert consumer.done() and follower.done() and not elsewhere.done()
        assert node.groups.calls[-1] == ("sync_leadership",)
        await node.partitions.close()
    asyncio.run(run())


def test_a_deleted_topic_stops_its_partitions_deletes_their_logs_and_forgets_its_offsets(tmp_path):
    async def run() -> None:
        node = _Node(tmp_path)
        node.start()
        parked = node.partitions.consumer_fetches.park([("a", 1)], node.partitions.consumer_fetches.now_ms() + 60_000)
        node.publish(RemoveTopicRecord(topic_id=A))
        assert node.hosted() == {} and node.on_disk() == set() and parked.done()
        assert node.groups.calls[1:] == [("forget", [("a", 0), ("a", 1)]), ("sync_leadership",)]
        await node.partitions.close()
    asyncio.run(run())


def test_a_partition_reassigned_away_is_stopped_and_its_log_deleted(tmp_path):
    async def run() -> None:
        node = _Node(tmp_path)
        node.start()
        node.publish(PartitionChangeRecord(partition_id=1, topic_id=A, replicas=[2], isr=[2]))
        assert node.hosted() == {("a", 0): "leader"} and node.on_disk() == {"a-0"}
        await node.partitions.close()
    asyncio.run(run())


def test_topic_config_changes_reach_the_topics_logs_only(tmp_path):
    async def run() -> None:
        node = _Node(tmp_path)
        node.start()
        node.publish(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="a", name="retention.ms", value="5000"))
        assert all(p.log.config.retention_ms == 5000 for p in node.partitions.partitions.values())
        assert log_config(node.metadata, "b").retention_ms == log_config(node.metadata, None).retention_ms != 5000
        await node.partitions.close()
    asyncio.run(run())


def test_an_append_wakes_followers_fetches_and_a_high_watermark_move_consumers(tmp_path):
    async def run() -> None:
        node = _Node(tmp_path)
        node.start()
        host = node.partitions
        far = host.consumer_fetches.now_ms() + 60_000
        leader = host.partition("a", 0)
        consumer = host.consumer_fetches.park([("a", 0)], far)
        follower = host.replica_fetches.park([("a", 0)], far)
        leader.append_as_leader(batch(1), 0)  # one replica: the high watermark follows the append
        assert consumer.done() and not follower.done()
        host.on_leader_append(leader)
        assert not follower.done(), "no follower to wake: the partition has one replica"
        node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, replicas=[1, 2], isr=[1]))
        follower = host.replica_fetches.park([("a", 0)], far)
        host.on_leader_append(leader)
        assert follower.done()
        await host.close()
    asyncio.run(run())


def test_the_metadata_view_answers_from_the_current_image(tmp_path):
    async def run() -> None:
        node = _Node(tmp_path)
        node.start()
        view = node.metadata
        assert view.topic_name(A) == "a" and view.topic_name(uuid.UUID(int=99)) is None
        assert [(broker_id, e.host, e.port) for broker_id, e in view.endpoints_for("PLAINTEXT")] == [
            (1, "h1", 9001), (2, "h2", 9002)]
        node.publish(_broker(3, listener="OTHER"))  # registered fenced
        assert [broker_id for broker_id, _ in view.endpoints_for("PLAINTEXT")] == [1, 2]
        assert view.replica_endpoint(2) == ("h2", 9002) and view.replica_endpoint(3) is None
        assert view.broker_epoch == -1, "not registered yet"
        assert view.is_valid_topic_name("ok.name") and not view.is_valid_topic_name("no/slash")
        await node.partitions.close()
    asyncio.run(run())
