"""Replaying records builds the image Kafka's MetadataDelta would, and says what changed."""

from __future__ import annotations

import uuid

import pytest

from gregor.metadata.delta import MetadataDelta, MetadataReplayError
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage, PartitionRegistration
from gregor.protocol.messages import (
    BrokerRegistrationChangeRecord, ConfigRecord, FeatureLevelRecord, FenceBrokerRecord, NoOpRecord,
    PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord, RemoveTopicRecord,
    TopicRecord, UnfenceBrokerRecord, UnregisterBrokerRecord,
)

T1 = uuid.UUID(int=1001)
T2 = uuid.UUID(int=1002)


def replay(image: MetadataImage, *records, start: int = 0, epoch: int = 1) -> tuple[MetadataDelta, MetadataImage]:
    delta = MetadataDelta(image)
    for offset, record in enumerate(records, start):
        delta.replay(record, offset, epoch)
    return delta, delta.apply()


def partition(topic_id: uuid.UUID, index: int, replicas: list[int], leader: int | None = None) -> PartitionRecord:
    return PartitionRecord(partition_id=index, topic_id=topic_id, replicas=replicas, isr=list(replicas),
                           leader=replicas[0] if leader is None else leader, leader_epoch=0, partition_epoch=0,
                           directories=[uuid.UUID(int=50 + r) for r in replicas])


def broker(broker_id: int, epoch: int = 10, fenced: bool = True) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=epoch,
                                end_points=[RegisterBrokerRecord.BrokerEndpoint(
                                    name="PLAINTEXT", host=f"h{broker_id}", port=9092, security_protocol=0)],
                                rack="r1", fenced=fenced)


@pytest.fixture
def two_topics() -> MetadataImage:
    _, image = replay(MetadataImage(cluster_id="c"),
                      FeatureLevelRecord(name="metadata.version", feature_level=21),
                      broker(1), broker(2), UnfenceBrokerRecord(id=1, epoch=10), UnfenceBrokerRecord(id=2, epoch=10),
                      TopicRecord(name="a", topic_id=T1), partition(T1, 0, [1, 2]), partition(T1, 1, [2, 1]),
                      TopicRecord(name="b", topic_id=T2), partition(T2, 0, [1]),
                      ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="a", name="retention.ms", value="5"))
    return image


def test_create_topics_brokers_and_features(two_topics):
    image = two_topics
    assert image.cluster_id == "c" and image.metadata_version == 21
    assert image.highest_offset == 10 and image.epoch == 1
    assert image.unfenced_brokers() == [1, 2]
    assert image.brokers[1].endpoint("PLAINTEXT").host == "h1" and image.brokers[1].rack == "r1"
    assert image.topics["a"] is image.topics_by_id[T1]
    assert image.topics["a"].partitions[1] == PartitionRegistration(
        (2, 1), (2, 1), 2, 0, 0, (), (), (uuid.UUID(int=52), uuid.UUID(int=51)), 0)
    assert image.topics["a"].replication_factor == 2
    assert dict(image.topic_config("a")) == {"retention.ms": "5"}
    assert image.partition("b", 0).leader == 1 and image.partition("b", 1) is None


def test_first_delta_reports_every_topic_and_partition_as_changed(two_topics):
    delta, _ = replay(MetadataImage(), TopicRecord(name="a", topic_id=T1), partition(T1, 0, [1]))
    assert delta.changed_topics() == {T1} and delta.created_topics() == {T1}
    assert list(delta.changed_partitions()) == [("a", 0)]
    assert delta.deleted_topics() == {}


def test_image_is_immutable(two_topics):
    with pytest.raises(TypeError):
        two_topics.topics["c"] = None
    with pytest.raises(AttributeError):
        two_topics.highest_offset = 3
    with pytest.raises(TypeError):
        two_topics.topics["a"].partitions[5] = None


def test_isr_change_keeps_leader_and_bumps_only_partition_epoch(two_topics):
    delta, image = replay(two_topics, PartitionChangeRecord(partition_id=0, topic_id=T1, isr=[1]), start=11)
    after = image.partition("a", 0)
    assert (after.isr, after.leader, after.leader_epoch, after.partition_epoch) == ((1,), 1, 0, 1)
    assert after.replicas == (1, 2)
    assert delta.changed_partitions() == {("a", 0): after}
    assert delta.changed_topics() == {T1} and delta.created_topics() == frozenset()
    assert two_topics.partition("a", 0).isr == (1, 2)
    assert image.topics["b"] is two_topics.topics["b"]


def test_leader_change_and_no_leader_bump_the_leader_epoch(two_topics):
    _, image = replay(two_topics, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2), start=11)
    assert (image.partition("a", 0).leader, image.partition("a", 0).leader_epoch) == (2, 1)
    _, image = replay(image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=-1, isr=[]), start=12)
    after = image.partition("a", 0)
    assert (after.leader, after.leader_epoch, after.partition_epoch) == (-1, 2, 2)
    assert after.isr == () and not after.has_leader


def test_replica_change_keeps_known_directories(two_topics):
    _, image = replay(two_topics, PartitionChangeRecord(partition_id=0, topic_id=T1, replicas=[2, 3],
                                                        adding_replicas=[3], removing_replicas=[1]), start=11)
    after = image.partition("a", 0)
    assert after.replicas == (2, 3) and after.adding_replicas == (3,) and after.removing_replicas == (1,)
    assert after.directories == (uuid.UUID(int=52), uuid.UUID(int=0))


def test_new_partition_of_existing_topic(two_topics):
    delta, image = replay(two_topics, partition(T2, 1, [2]), start=11)
    assert sorted(image.topics["b"].partitions) == [0, 1]
    assert list(delta.changed_partitions()) == [("b", 1)]


def test_delete_topic_drops_partitions_and_configs(two_topics):
    delta, image = replay(two_topics, RemoveTopicRecord(topic_id=T1), start=11)
    assert "a" not in image.topics and T1 not in image.topics_by_id
    assert (TOPIC_RESOURCE, "a") not in image.configs
    assert delta.deleted_topics() == {T1: "a"}
    assert delta.changed_topics() == frozenset() and delta.changed_configs() == {(TOPIC_RESOURCE, "a")}


def test_delete_and_recreate_in_one_delta(two_topics):
    new = uuid.UUID(int=2001)
    delta, image = replay(two_topics, RemoveTopicRecord(topic_id=T1), TopicRecord(name="a", topic_id=new),
                          partition(new, 0, [1]), start=11)
    assert image.topics["a"].topic_id == new and list(image.topics["a"].partitions) == [0]
    assert delta.deleted_topics() == {T1: "a"} and delta.changed_topics() == {new}


def test_create_then_delete_in_one_delta_reports_nothing():
    delta, image = replay(MetadataImage(), TopicRecord(name="x", topic_id=T1), partition(T1, 0, [1]),
                          RemoveTopicRecord(topic_id=T1))
    assert not image.topics and delta.deleted_topics() == {} and delta.changed_partitions() == {}


def test_config_set_overwrite_and_delete(two_topics):
    def config(name, value, resource=TOPIC_RESOURCE, resource_name="a"):
        return ConfigRecord(resource_type=resource, resource_name=resource_name, name=name, value=value)
    delta, image = replay(two_topics, config("retention.ms", "7"), config("segment.bytes", "1000"),
                          config("log.retention.ms", "9", BROKER_RESOURCE, "1"),
                          config("log.retention.ms", "8", BROKER_RESOURCE, ""), start=11)
    assert dict(image.topic_config("a")) == {"retention.ms": "7", "segment.bytes": "1000"}
    assert dict(image.broker_config(1)) == {"log.retention.ms": "9"}
    assert dict(image.broker_config("")) == {"log.retention.ms": "8"}
    assert delta.changed_configs() == {(TOPIC_RESOURCE, "a"), (BROKER_RESOURCE, "1"), (BROKER_RESOURCE, "")}
    _, image = replay(image, config("retention.ms", None), config("segment.bytes", None), start=15)
    assert (TOPIC_RESOURCE, "a") not in image.configs and image.topic_config("a") == {}


def test_broker_fencing_registration_change_and_unregister(two_topics):
    _, image = replay(two_topics, FenceBrokerRecord(id=2, epoch=10), start=11)
    assert image.unfenced_brokers() == [1]
    _, image = replay(image, BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=10, fenced=-1), start=12)
    assert image.unfenced_brokers() == [1, 2]
    _, image = replay(image, BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=10, fenced=0,
                                                            in_controlled_shutdown=1), start=13)
    assert not image.brokers[2].fenced and image.brokers[2].in_controlled_shutdown
    delta, image = replay(image, UnregisterBrokerRecord(broker_id=2, broker_epoch=10), start=14)
    assert list(image.brokers) == [1] and delta.changed_brokers() == {2}


def test_reregistration_replaces_the_broker(two_topics):
    _, image = replay(two_topics, broker(1, epoch=20), start=11)
    assert image.brokers[1].epoch == 20 and image.brokers[1].fenced


def test_features_and_producer_ids_and_noop(two_topics):
    _, image = replay(two_topics, FeatureLevelRecord(name="x.version", feature_level=3),
                      ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=1000), NoOpRecord(), start=11)
    assert dict(image.features) == {"metadata.version": 21, "x.version": 3}
    assert image.next_producer_id == 1000 and image.highest_offset == 13
    _, image = replay(image, FeatureLevelRecord(name="x.version", feature_level=0), start=14)
    assert dict(image.features) == {"metadata.version": 21}


@pytest.mark.parametrize("record", [
    PartitionRecord(partition_id=0, topic_id=uuid.UUID(int=9), replicas=[1], isr=[1], leader=1),
    PartitionChangeRecord(partition_id=7, topic_id=T1, isr=[1]),
    RemoveTopicRecord(topic_id=uuid.UUID(int=9)),
    TopicRecord(name="a", topic_id=uuid.UUID(int=9)),
    TopicRecord(name="z", topic_id=T1),
    FenceBrokerRecord(id=1, epoch=11),
    UnfenceBrokerRecord(id=9, epoch=10),
    UnregisterBrokerRecord(broker_id=1, broker_epoch=3),
    ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=-5),
    "not a record",
])
def test_records_contradicting_the_image_are_refused(two_topics, record):
    with pytest.raises(MetadataReplayError):
        MetadataDelta(two_topics).replay(record, 11)


def test_replaying_in_one_delta_or_many_gives_the_same_image(two_topics):
    records = [PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2), RemoveTopicRecord(topic_id=T2),
               ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="a", name="segment.ms", value="1")]
    _, at_once = replay(two_topics, *records, start=11)
    image = two_topics
    for offset, record in enumerate(records, 11):
        _, image = replay(image, record, start=offset)
    assert image == at_once
