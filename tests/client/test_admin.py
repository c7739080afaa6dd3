"""Gregor's AdminClient against a real Gregor broker and against tansu, with confluent-kafka
(librdkafka) as the independent oracle of what the cluster holds.

tansu 0.6 lacks some APIs; each case that cannot run there says why. Where tansu does not
advertise an API at all, the test checks that the client says so (UNSUPPORTED_VERSION) instead.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import ConfigResource as ConfluentResource

from gregor.client import KafkaException, UnknownTopicOrPartitionError
from gregor.client.admin import (
    AlterConfigOp, AlterConfigOpType, ConfigResource, ConfigSource, CreatedTopic, ListedOffset, NewTopic,
    OffsetAndMetadata, OffsetSpec, ResourceType,
)
from gregor.client.network import TopicPartition

pytestmark = pytest.mark.interop


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(bootstrap: str, topic: str, partition: int, count: int, first_timestamp: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(count):
        producer.produce(topic, value=b"v%d" % index, partition=partition, timestamp=first_timestamp + index * 1000)
    assert producer.flush(10) == 0


def test_topics_are_created_listed_described_and_deleted(admin, peer):
    name, other = unique("adm"), unique("adm")
    created = admin.create_topics([NewTopic(name, 3, 1, config={"retention.ms": "3600000"}), NewTopic(other, 1, 1)])
    assert set(created) == {name, other}
    assert isinstance(created[name], CreatedTopic)
    assert (created[name].num_partitions, created[name].replication_factor) == (3, 1)
    again = admin.create_topics([NewTopic(name, 3, 1)])[name]
    assert isinstance(again, KafkaException) and again.name == "TOPIC_ALREADY_EXISTS"

    listed = admin.list_topics()
    assert {name, other} <= set(listed)
    assert listed[name].topic_id == created[name].topic_id

    described = admin.describe_topics([name, "no-such-topic"])
    description = described[name]
    nodes = {node.node_id for node in admin.describe_cluster().nodes}
    assert [partition.partition for partition in description.partitions] == [0, 1, 2]
    for partition in description.partitions:
        assert partition.leader in nodes and list(partition.replicas) == [partition.leader]
        assert list(partition.isr) == [partition.leader]
    assert isinstance(described["no-such-topic"], UnknownTopicOrPartitionError)
    assert described["no-such-topic"].name == "UNKNOWN_TOPIC_OR_PARTITION"

    oracle = ConfluentAdmin({"bootstrap.servers": peer.bootstrap}).list_topics(timeout=10).topics
    assert len(oracle[name].partitions) == 3 and len(oracle[other].partitions) == 1

    deleted = admin.delete_topics([name, other, "no-such-topic"])
    assert deleted[name] is None and deleted[other] is None
    assert deleted["no-such-topic"].name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert not {name, other} & set(admin.list_topics())


def test_validate_only_creates_nothing(admin, peer):
    peer.lacks("CreateTopics validate_only (it creates the topic)")
    name = unique("validate")
    assert isinstance(admin.create_topics([NewTopic(name, 2, 1)], validate_only=True)[name], CreatedTopic)
    assert name not in admin.list_topics()


def test_invalid_topic_settings_get_kafkas_error(admin, peer):
    peer.lacks("validation of partition counts and config values in CreateTopics")
    name = unique("bad")
    refused = admin.create_topics([NewTopic(name, 1, 1, config={"retention.ms": "soon"}),
                                   NewTopic(name + "-zero", 0, 1)])
    assert refused[name].name == "INVALID_CONFIG"
    assert refused[name + "-zero"].name == "INVALID_PARTITIONS"


def test_partitions_are_added(admin, peer):
    name = unique("grow")
    admin.create_topics([NewTopic(name, 1, 1)])
    if peer.kind == "tansu":
        with pytest.raises(KafkaException) as unsupported:
            admin.create_partitions({name: 3})
        assert unsupported.value.name == "UNSUPPORTED_VERSION" and "CREATE_PARTITIONS" in str(unsupported.value)
        return
    assert admin.create_partitions({name: 3}) == {name: None}
    assert admin.create_partitions({name: 2})[name].name == "INVALID_PARTITIONS"
    assert len(admin.describe_topics([name])[name].partitions) == 3
    oracle = ConfluentAdmin({"bootstrap.servers": peer.bootstrap}).list_topics(timeout=10).topics
    assert len(oracle[name].partitions) == 3


def test_topic_configs_are_described_and_changed(admin, peer):
    name = unique("cfg")
    admin.create_topics([NewTopic(name, 1, 1, config={"retention.ms": "3600000"})])
    resource = ConfigResource("topic", name)
    assert admin.describe_configs([resource])[resource]["retention.ms"].value == "3600000"
    change = AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.SET)
    assert admin.incremental_alter_configs({resource: [change]}) == {resource: None}
    assert admin.describe_configs([resource])[resource]["cleanup.policy"].value == "compact"
    oracle = ConfluentAdmin({"bootstrap.servers": peer.bootstrap})
    confluent_entries = list(oracle.describe_configs([ConfluentResource("topic", name)]).values())[0].result()
    assert confluent_entries["cleanup.policy"].value == "compact"
    assert confluent_entries["retention.ms"].value == "3600000"
    if peer.kind == "tansu":
        with pytest.raises(KafkaException) as unsupported:
            admin.alter_configs({resource: {"retention.ms": "1000"}})
        assert unsupported.value.name == "UNSUPPORTED_VERSION" and "ALTER_CONFIGS" in str(unsupported.value)
    peer.lacks("config sources, defaults, broker configs or value checks in DescribeConfigs and "
               "IncrementalAlterConfigs, nor AlterConfigs")

    entries = admin.describe_configs([resource])[resource]
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert entries["segment.bytes"].is_default and entries["segment.bytes"].value == "1073741824"
    assert admin.alter_configs({resource: {"retention.ms": "7200000"}}) == {resource: None}
    after = admin.describe_configs([resource])[resource]
    assert after["retention.ms"].value == "7200000"
    assert after["cleanup.policy"].is_default, "AlterConfigs replaces the whole dynamic config"
    bad = admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", "soon")]})[resource]
    assert bad.name == "INVALID_CONFIG"
    broker_resource = ConfigResource(ResourceType.BROKER, str(admin.describe_cluster().nodes[0].node_id))
    assert "log.segment.bytes" in admin.describe_configs([broker_resource])[broker_resource]


def test_the_cluster_is_described_as_librdkafka_sees_it(admin, peer):
    described = admin.describe_cluster()
    confluent = ConfluentAdmin({"bootstrap.servers": peer.bootstrap})
    oracle = confluent.describe_cluster().result(10)
    assert described.cluster_id == oracle.cluster_id
    assert [(node.node_id, node.host, node.port) for node in described.nodes] == \
        [(node.id, node.host, node.port) for node in oracle.nodes]
    assert described.controller is not None and described.controller.node_id == oracle.controller.id


def test_offsets_are_listed_by_time_and_records_deleted(admin, peer):
    name = unique("offsets")
    admin.create_topics([NewTopic(name, 2, 1)])
    produce(peer.bootstrap, name, 1, 10, first_timestamp=1_600_000_000_000)
    tp = TopicPartition(name, 1)
    found = admin.list_offsets({tp: OffsetSpec.earliest(), (name, 0): OffsetSpec.latest(),
                                ("no-such-topic", 0): OffsetSpec.latest()})
    assert found[TopicPartition(name, 0)].offset == 0
    assert found[("no-such-topic", 0)].name == "UNKNOWN_TOPIC_OR_PARTITION"
    latest = admin.list_offsets({tp: OffsetSpec.latest()})[tp].offset
    by_time = admin.list_offsets({tp: OffsetSpec.for_timestamp(1_600_000_004_500)})[tp].offset

    oracle = Consumer({"bootstrap.servers": peer.bootstrap, "group.id": unique("oracle")})
    assert (found[tp].offset, latest) == oracle.get_watermark_offsets(ConfluentPartition(name, 1), timeout=10)
    assert by_time == oracle.offsets_for_times([ConfluentPartition(name, 1, 1_600_000_004_500)], timeout=10)[0].offset
    oracle.close()
    peer.lacks("record offsets in ListOffsets (it answers batch positions, librdkafka sees the same), "
               "MAX_TIMESTAMP or DeleteRecords (it drops the connection)")
    assert (found[tp].offset, latest, by_time) == (0, 10, 5)
    assert admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp] == ListedOffset(9, 1_600_000_009_000, 0)
    assert admin.delete_records({tp: 4})[tp].low_watermark == 4
    assert admin.list_offsets({tp: OffsetSpec.earliest()})[tp].offset == 4
    beyond = admin.delete_records({tp: 99})[tp]
    assert beyond.name == "OFFSET_OUT_OF_RANGE"


def test_group_offsets_are_altered_listed_and_deleted(admin, peer):
    name, group = unique("g-topic"), unique("group")
    admin.create_topics([NewTopic(name, 2, 1)])
    produce(peer.bootstrap, name, 0, 5, first_timestamp=1_600_000_000_000)
    committed = admin.alter_consumer_group_offsets(group, {(name, 0): OffsetAndMetadata(3, "why"), (name, 1): 0})
    assert committed == {TopicPartition(name, 0): None, TopicPartition(name, 1): None}
    offsets = admin.list_consumer_group_offsets(group)
    assert offsets[TopicPartition(name, 0)].offset == 3 and offsets[TopicPartition(name, 1)].offset == 0
    if peer.kind == "gregor":  # tansu 0.6 does not keep commit metadata
        assert offsets[TopicPartition(name, 0)].metadata == "why"

    oracle = Consumer({"bootstrap.servers": peer.bootstrap, "group.id": group})
    assert [p.offset for p in oracle.committed([ConfluentPartition(name, 0)], timeout=10)] == [3]
    oracle.close()

    assert group in {listing.group_id for listing in admin.list_consumer_groups()}
    assert admin.describe_consumer_groups([group])[group].state == "Empty"
    if peer.kind == "gregor":
        assert admin.delete_consumer_group_offsets(group, [(name, 1)]) == {TopicPartition(name, 1): None}
        assert list(admin.list_consumer_group_offsets(group)) == [TopicPartition(name, 0)]
    else:
        with pytest.raises(KafkaException) as unsupported:
            admin.delete_consumer_group_offsets(group, [(name, 1)])
        assert unsupported.value.name == "UNSUPPORTED_VERSION" and "OFFSET_DELETE" in str(unsupported.value)
    assert admin.delete_consumer_groups([group]) == {group: None}
    if peer.kind == "gregor":
        assert admin.delete_consumer_groups([group])[group].name == "GROUP_ID_NOT_FOUND"


def test_a_live_group_is_described_with_its_members_assignments(admin, peer):
    name, group = unique("live"), unique("live-group")
    admin.create_topics([NewTopic(name, 3, 1)])
    member = Consumer({"bootstrap.servers": peer.bootstrap, "group.id": group, "client.id": "member-one",
                       "partition.assignment.strategy": "range", "session.timeout.ms": 6000})
    member.subscribe([name])
    try:
        deadline = time.monotonic() + 20
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.1)
        assert member.assignment()
        description = admin.describe_consumer_groups([group])[group]
        assert (description.state, description.protocol_type) == ("Stable", "consumer")
        (described,) = description.members
        assert described.member_id.startswith("member-one")
        peer.lacks("members' client id, protocol and assignment in DescribeGroups (it leaves them empty)")
        assert described.client_id == "member-one" and description.protocol == "range"
        assert sorted(described.assignment) == [TopicPartition(name, index) for index in range(3)]
        listing = {item.group_id: item for item in admin.list_consumer_groups(states=["Stable"])}
        assert listing[group].protocol_type == "consumer" and listing[group].state == "Stable"
        assert group not in {item.group_id for item in admin.list_consumer_groups(states=["Empty"])}
    finally:
        member.close()
