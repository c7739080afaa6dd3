"""Metadata snapshots: the image written as records rebuilds the same image; a node snapshots
after `metadata.log.max.record.bytes.between.snapshots` and drops the log prefix; a restart (and
a node given only the snapshot) rebuilds the image from the snapshot plus the log after it; a
snapshot replacing an image reports the topics that disappeared."""

from __future__ import annotations

import random

import pytest

from gregor.controller.metadata_replay import SnapshotPolicy, decode_snapshot, encode_snapshot
from gregor.controller.operations import AlterConfigsResource, CreatableTopic
from gregor.controller.quorum_controller import ControllerConfig
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from gregor.metadata.loader import MetadataLoader
from gregor.metadata.record_codec import MetadataRecordError
from gregor.raft.storage_log import metadata_partition_dir
from gregor.records.record import BatchBuilder
from tests.unit.controller.conftest import NOW, endpoints
from tests.unit.controller.metadata_node import MetadataNode

class Recorder:
    def __init__(self) -> None:
        self.deltas = []

    def on_metadata_update(self, delta, image) -> None:
        self.deltas.append(delta)


def busy_node(directory, policy: SnapshotPolicy) -> MetadataNode:
    node = MetadataNode.open(str(directory), ControllerConfig(node_id=1), "cluster-1", random.Random(3), NOW, policy)
    node.start(NOW)
    node.bootstrap(endpoints(1), "rack-a", NOW)
    for broker in (2, 3):
        node.commit(node.controller.register_broker(broker, endpoints(broker), f"rack-{broker}"), NOW)
    node.commit(node.controller.create_topics([CreatableTopic("orders", 3, 1, configs={"retention.ms": "1000"}),
                                               CreatableTopic("gone", 1, 1)]), NOW)
    node.commit(node.controller.alter_configs([AlterConfigsResource(BROKER_RESOURCE, "", {"log.retention.ms": "5"})],
                                              False), NOW)
    node.commit(node.controller.allocate_producer_ids(1, node.image.brokers[1].epoch), NOW)
    node.commit(node.controller.delete_topics(["gone"]), NOW)
    return node


def test_an_image_written_as_a_snapshot_reads_back_the_same(tmp_path):
    node = busy_node(tmp_path, SnapshotPolicy())
    image = node.image
    loader = MetadataLoader(MetadataImage(cluster_id=image.cluster_id))
    loader.load_snapshot(decode_snapshot(encode_snapshot(image, NOW)), image.highest_offset + 1, image.epoch)
    assert loader.image == image
    assert loader.image.topic_config("orders") == {"retention.ms": "1000"} and loader.image.next_producer_id == 1000
    node.close()


def test_a_node_snapshots_drops_the_log_prefix_and_restarts_from_the_snapshot(tmp_path):
    node = busy_node(tmp_path, SnapshotPolicy(max_bytes_between_snapshots=200))
    assert node.raft.log.start_offset > 0, "no snapshot was taken"
    snapshot = node.raft.log.latest_snapshot()
    assert snapshot.id.end_offset <= node.image.highest_offset + 1
    image = node.image
    node.close()
    reopened = MetadataNode.open(str(tmp_path), ControllerConfig(node_id=1), "cluster-1", random.Random(3), NOW,
                                 SnapshotPolicy(max_bytes_between_snapshots=200))
    reopened.start(NOW)
    assert reopened.image.topics.keys() == image.topics.keys()
    assert reopened.image.brokers == image.brokers and reopened.image.configs == image.configs
    reopened.close()


def test_a_snapshot_replacing_an_image_reports_deleted_topics_and_every_partition(tmp_path):
    node = busy_node(tmp_path, SnapshotPolicy())
    before = node.image
    node.commit(node.controller.delete_topics(["orders"]), NOW)
    node.commit(node.controller.create_topics([CreatableTopic("fresh", 2, 1)]), NOW)
    after = node.image
    loader = MetadataLoader(before)
    recorder = Recorder()
    loader.install(recorder)
    delta = loader.load_snapshot(decode_snapshot(encode_snapshot(after, NOW)), after.highest_offset + 1, after.epoch)
    assert set(delta.deleted_topics().values()) == {"orders"}
    assert set(delta.changed_partitions()) == {("fresh", 0), ("fresh", 1)}
    assert (TOPIC_RESOURCE, "orders") in delta.changed_configs()
    assert loader.image == after and recorder.deltas[-1] is delta
    node.close()


def test_snapshot_files_live_in_the_metadata_partition_directory(tmp_path):
    node = busy_node(tmp_path, SnapshotPolicy(max_bytes_between_snapshots=200))
    node.close()
    names = [path.name for path in (tmp_path / "__cluster_metadata-0").iterdir()]
    assert any(name.endswith(".checkpoint") for name in names), names
    assert metadata_partition_dir(str(tmp_path)).endswith("__cluster_metadata-0")


def test_a_snapshot_record_without_a_value_is_a_metadata_record_error():
    builder = BatchBuilder()
    builder.append(NOW, None, None)
    with pytest.raises(MetadataRecordError, match="offset 0 has no value"):
        decode_snapshot(builder.build())
