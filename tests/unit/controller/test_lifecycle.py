"""Bootstrap, broker registration, producer ids, publishing, and restart = replay."""

from __future__ import annotations

import random

from tests.unit.controller.metadata_node import MetadataNode
from gregor.controller.operations import AlterConfigsResource, CreatableTopic, PartitionsIncrease
from gregor.controller.quorum_controller import (
    ControllerConfig, QuorumController, generate_cluster_id,
)
from gregor.metadata.image import TOPIC_RESOURCE
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FeatureLevelRecord
from gregor.raft.memory_log import MemoryLog
from gregor.raft.quorum_state_file import QuorumStateFile
from gregor.raft.storage_log import metadata_partition_dir
from tests.unit.controller.conftest import NOW, endpoints


def test_cluster_id_is_kafkas_22_character_form():
    cluster_id = generate_cluster_id(random.Random(1))
    assert len(cluster_id) == 22 and not cluster_id.startswith("-") and "=" not in cluster_id
    assert generate_cluster_id(random.Random(1)) == cluster_id


def test_bootstrap_registers_and_unfences_the_local_broker(node):
    image = node.image
    assert image.cluster_id == "cluster-1" and image.metadata_version == 21
    registration = image.brokers[1]
    assert not registration.fenced and registration.rack == "rack-a"
    assert registration.endpoint("PLAINTEXT").host == "host1"
    assert node.controller.bootstrap().records == ()


def test_registration_before_bootstrap_is_refused():
    controller = QuorumController(ControllerConfig(node_id=1), random.Random(0))
    assert controller.bootstrap().records == (FeatureLevelRecord(name="metadata.version", feature_level=21),
                                              FeatureLevelRecord(name="share.version", feature_level=1),
                                              FeatureLevelRecord(name="transaction.version", feature_level=2),
                                              FeatureLevelRecord(name="group.version", feature_level=1))
    assert controller.register_broker(1, endpoints(1)).response.error == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_a_broker_that_cannot_honour_a_finalized_feature_is_refused(node):
    refused = node.controller.register_broker(2, endpoints(2), supported_features={"metadata.version": (1, 20)})
    assert refused.response.error == ErrorCode.UNSUPPORTED_VERSION and not refused.records
    assert "metadata.version=21 (supported 1-20)" in refused.response.message
    missing = node.controller.register_broker(2, endpoints(2), supported_features={})
    assert missing.response.error == ErrorCode.UNSUPPORTED_VERSION
    accepted = node.commit(node.controller.register_broker(
        2, endpoints(2), supported_features={"metadata.version": (1, 21), "group.version": (0, 1),
                                             "share.version": (0, 1), "transaction.version": (1, 2)}), NOW)
    assert accepted.error == ErrorCode.NONE


def test_reregistration_gets_a_higher_epoch(node):
    first = node.image.brokers[1].epoch
    reply = node.commit(node.controller.register_broker(1, endpoints(1)), NOW)
    assert reply.broker_epoch > first and node.image.brokers[1].epoch == reply.broker_epoch


def test_producer_id_blocks(node):
    epoch = node.image.brokers[1].epoch
    first = node.commit(node.controller.allocate_producer_ids(1, epoch), NOW)
    second = node.commit(node.controller.allocate_producer_ids(1, epoch), NOW)
    assert (first.first_producer_id, first.size, second.first_producer_id) == (0, 1000, 1000)
    assert node.image.next_producer_id == 2000
    assert node.controller.allocate_producer_ids(1, epoch - 1).response.error == ErrorCode.STALE_BROKER_EPOCH
    assert node.controller.allocate_producer_ids(9, 0).response.error == ErrorCode.BROKER_ID_NOT_REGISTERED


class Broker:
    """What the broker does with each image: keep its local partitions in step."""

    def __init__(self) -> None:
        self.local: set[tuple[str, int]] = set()

    def on_metadata_update(self, delta, image) -> None:
        for name in delta.deleted_topics().values():
            self.local = {key for key in self.local if key[0] != name}
        self.local |= set(delta.changed_partitions())


def test_publisher_follows_creates_and_deletes(node):
    broker = Broker()
    node.install(broker)
    node.commit(node.controller.create_topics([CreatableTopic("a", 2, 1), CreatableTopic("b")]), NOW)
    node.commit(node.controller.create_partitions([PartitionsIncrease("b", 2)]), NOW)
    node.commit(node.controller.delete_topics(["a"]), NOW)
    assert broker.local == {("b", 0), ("b", 1)}


def workload(node: MetadataNode) -> None:
    node.start(NOW)
    node.bootstrap(endpoints(1), None, NOW)
    node.commit(node.controller.create_topics([CreatableTopic("a", 3, 1, configs={"retention.ms": "10"}),
                                               CreatableTopic("b", 1, 1), CreatableTopic("c", 2, 1)]), NOW + 1)
    node.commit(node.controller.delete_topics(["b"]), NOW + 2)
    node.commit(node.controller.create_partitions([PartitionsIncrease("c", 4)]), NOW + 3)
    node.commit(node.controller.alter_configs([AlterConfigsResource(TOPIC_RESOURCE, "c", {"flush.ms": "5"})]), NOW + 4)
    node.commit(node.controller.allocate_producer_ids(1, node.image.brokers[1].epoch), NOW + 5)


def test_restart_over_the_storage_log_rebuilds_an_identical_image(tmp_path):
    config = ControllerConfig(node_id=1)
    node = MetadataNode.open(str(tmp_path), config, "cid", random.Random(5), NOW)
    workload(node)
    before = node.image
    node.close()
    reopened = MetadataNode.open(str(tmp_path), config, "cid", random.Random(6), NOW + 10)
    broker = Broker()
    reopened.install(broker)
    after = reopened.start(NOW + 10)
    assert after == before and reopened.controller.image == before
    assert broker.local == {("a", 0), ("a", 1), ("a", 2), ("c", 0), ("c", 1), ("c", 2), ("c", 3)}
    assert QuorumStateFile(metadata_partition_dir(str(tmp_path))).read().epoch == 2
    reply = reopened.bootstrap(endpoints(1), None, NOW + 11)
    assert reply.broker_epoch > before.brokers[1].epoch
    [again] = reopened.commit(reopened.controller.create_topics([CreatableTopic("a")]), NOW + 12)
    assert again.error == ErrorCode.TOPIC_ALREADY_EXISTS
    reopened.close()


def test_replaying_the_same_log_twice_gives_the_same_image(tmp_path):
    log = MemoryLog()
    node = MetadataNode.over(log, QuorumStateFile(str(tmp_path)), ControllerConfig(node_id=1), "cid",
                             random.Random(5))
    workload(node)
    replica = MetadataNode.over(log, QuorumStateFile(str(tmp_path / "other")), ControllerConfig(node_id=1), "cid",
                                random.Random(9))
    replica.loader.load(node.raft.committed())
    assert replica.image == node.image
