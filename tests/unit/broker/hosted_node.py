"""Broker 1's MetadataView, PartitionHost and metadata publisher, wired as the composition root
wires them, over real logs in a temporary log dir, fed images replayed from metadata records; the
group coordinator is a fake that records its calls."""

from __future__ import annotations

import os
import uuid

from gregor.broker.broker_metadata import BrokerMetadata
from gregor.broker.config import BrokerConfig
from gregor.broker.events import BrokerEvents
from gregor.broker.hosted_partitions import HostedPartitions
from gregor.broker.log_maintenance import cleaner_config
from gregor.broker.metadata_publisher import BrokerMetadataPublisher
from gregor.metadata.delta import MetadataDelta
from gregor.protocol.messages import PartitionRecord, RegisterBrokerRecord, TopicRecord, UnfenceBrokerRecord

A = uuid.UUID(int=1)
B = uuid.UUID(int=2)


class Groups:
    """The GroupRuntime side the publisher calls."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def sync_leadership(self) -> None:
        self.calls.append(("sync_leadership",))

    def forget_partitions(self, partitions) -> None:
        self.calls.append(("forget", sorted(partitions)))


class Controller:
    async def send_to_controller(self, request, version, timeout_s):
        raise AssertionError("nothing here asks the controller")


def partition_record(topic_id: uuid.UUID, index: int, replicas: list[int]) -> PartitionRecord:
    return PartitionRecord(partition_id=index, topic_id=topic_id, replicas=replicas, isr=list(replicas),
                           leader=replicas[0], leader_epoch=0, partition_epoch=0)


def broker_record(broker_id: int, listener: str = "PLAINTEXT") -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=10,
                                end_points=[RegisterBrokerRecord.BrokerEndpoint(
                                    name=listener, host=f"h{broker_id}", port=9000 + broker_id, security_protocol=0)],
                                rack="r1", fenced=True)


class Node:
    """Broker 1's metadata, partitions and publisher, as the composition root wires them."""

    def __init__(self, tmp_path) -> None:
        self.log_dir = str(tmp_path / "logs")
        self.config = BrokerConfig({"node.id": "1", "log.dirs": self.log_dir, "process.roles": "broker",
                                    "controller.quorum.voters": "9@127.0.0.1:9999"})
        self.metadata = BrokerMetadata(self.config)
        self.partitions = HostedPartitions(self.config, self.metadata, Controller(), BrokerEvents())
        self.groups = Groups()
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
        self.publish(broker_record(1), broker_record(2), UnfenceBrokerRecord(id=1, epoch=10), UnfenceBrokerRecord(id=2, epoch=10),
                     TopicRecord(name="a", topic_id=A), partition_record(A, 0, [1]), partition_record(A, 1, [2, 1]),
                     TopicRecord(name="b", topic_id=B), partition_record(B, 0, [2]))

    def hosted(self) -> dict[tuple[str, int], str]:
        return {key: "leader" if partition.is_leader else f"follower of {partition.leader_id}"
                for key, partition in self.partitions.partitions.items()}

    def on_disk(self) -> set[str]:
        return {name for name in os.listdir(self.log_dir) if not name.startswith(".") and "-" in name
                and os.path.isdir(os.path.join(self.log_dir, name)) and not name.endswith("-delete")}
