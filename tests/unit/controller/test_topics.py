"""CreateTopics, DeleteTopics and CreatePartitions: Kafka's checks, errors and placement."""

from __future__ import annotations

import uuid

import pytest

from gregor.controller.operations import CreatableTopic, PartitionsIncrease
from gregor.controller.placement import place_replicas
from gregor.controller.topic_names import topic_name_error
from gregor.metadata.topic_configs import ConfigSource
from gregor.protocol.error_codes import ErrorCode
from tests.unit.controller.conftest import NOW, start_node


def create(node, *topics, validate_only=False):
    return node.commit(node.controller.create_topics(list(topics), validate_only), NOW)


def test_create_with_defaults_and_configs(tmp_path):
    node = start_node(tmp_path, default_num_partitions=3, broker_config={"log.retention.hours": "1"})
    [result] = create(node, CreatableTopic("orders", configs={"cleanup.policy": "compact"}))
    assert (result.error, result.num_partitions, result.replication_factor) == (ErrorCode.NONE, 3, 1)
    topic = node.image.topics["orders"]
    assert topic.topic_id == result.topic_id and sorted(topic.partitions) == [0, 1, 2]
    assert all(p.replicas == (1,) and p.isr == (1,) and p.leader == 1 and p.leader_epoch == 0
               for p in topic.partitions.values())
    assert dict(node.image.topic_config("orders")) == {"cleanup.policy": "compact"}
    configs = {entry.name: entry for entry in result.configs}
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == ("compact", ConfigSource.TOPIC_CONFIG)
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        "3600000", ConfigSource.STATIC_BROKER_CONFIG)


def test_validate_only_writes_nothing(node):
    before = node.image
    [result] = create(node, CreatableTopic("t", 2, 1), validate_only=True)
    assert result.error == ErrorCode.NONE and result.num_partitions == 2
    assert node.image is before


@pytest.mark.parametrize("topic,code", [
    (CreatableTopic(""), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (CreatableTopic("."), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (CreatableTopic(".."), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (CreatableTopic("a" * 250), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (CreatableTopic("with space"), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (CreatableTopic("ümlaut"), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (CreatableTopic("exist_ing"), ErrorCode.TOPIC_ALREADY_EXISTS),
    (CreatableTopic("exist.ing"), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (CreatableTopic("t", 0, 1), ErrorCode.INVALID_PARTITIONS),
    (CreatableTopic("t", -5, 1), ErrorCode.INVALID_PARTITIONS),
    (CreatableTopic("t", 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR),
    (CreatableTopic("t", 1, 2), ErrorCode.INVALID_REPLICATION_FACTOR),
    (CreatableTopic("t", configs={"retention.ms": "soon"}), ErrorCode.INVALID_CONFIG),
    (CreatableTopic("t", configs={"no.such": "1"}), ErrorCode.INVALID_CONFIG),
    (CreatableTopic("t", configs={"retention.ms": None}), ErrorCode.INVALID_CONFIG),
    (CreatableTopic("t", 1, -1, {0: [1]}), ErrorCode.INVALID_REQUEST),
    (CreatableTopic("t", -1, 1, {0: [1]}), ErrorCode.INVALID_REQUEST),
    (CreatableTopic("t", assignments={1: [1]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (CreatableTopic("t", assignments={0: []}), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (CreatableTopic("t", assignments={0: [1, 1]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (CreatableTopic("t", assignments={0: [9]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
])
def test_create_errors(node, topic, code):
    create(node, CreatableTopic("exist_ing"))
    before = node.image
    [result] = create(node, topic)
    assert result.error == code and result.message
    assert (result.topic_id, result.num_partitions, result.replication_factor) == (uuid.UUID(int=0), -1, -1)
    assert node.image is before


def test_default_replication_factor_larger_than_the_cluster(tmp_path):
    node = start_node(tmp_path, default_replication_factor=3)
    [result] = create(node, CreatableTopic("t"))
    assert result.error == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "only 1 broker(s) are registered" in result.message


def test_duplicates_in_one_request_fail_and_others_succeed(node):
    results = create(node, CreatableTopic("d"), CreatableTopic("ok"), CreatableTopic("d"))
    assert [r.error for r in results] == [ErrorCode.INVALID_REQUEST, ErrorCode.NONE, ErrorCode.INVALID_REQUEST]
    assert set(node.image.topics) == {"ok"}


def test_manual_assignment_and_placement_over_three_brokers(cluster):
    [manual] = create(cluster, CreatableTopic("m", assignments={0: [3, 1], 1: [2, 3]}))
    assert manual.error == ErrorCode.NONE and (manual.num_partitions, manual.replication_factor) == (2, 2)
    assert cluster.image.partition("m", 0).leader == 3 and cluster.image.partition("m", 1).replicas == (2, 3)
    [mixed] = create(cluster, CreatableTopic("x", assignments={0: [1], 1: [1, 2]}))
    assert mixed.error == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    [auto] = create(cluster, CreatableTopic("a", 6, 3))
    partitions = cluster.image.topics["a"].partitions
    assert all(sorted(p.replicas) == [1, 2, 3] for p in partitions.values())
    assert sorted(p.leader for p in partitions.values()) == [1, 1, 2, 2, 3, 3]


def test_round_robin_placement_spreads_leaders():
    import random
    placement = place_replicas([1, 2, 3, 4], range(8), 2, random.Random(3))
    assert all(len(set(r)) == 2 for r in placement.values())
    leaders = [r[0] for r in placement.values()]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3, 4, 4]


def test_topic_name_rules():
    assert topic_name_error("a-b_c.D9") is None
    assert topic_name_error("a" * 249) is None


def test_delete_by_name_and_id(node):
    created = create(node, CreatableTopic("a"), CreatableTopic("b"), CreatableTopic("c"))
    ids = {r.name: r.topic_id for r in created}
    results = node.commit(node.controller.delete_topics(["a", "nope"], [ids["b"], uuid.UUID(int=12345)]), NOW)
    assert [(r.name, r.error) for r in results] == [
        ("a", ErrorCode.NONE), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("b", ErrorCode.NONE), (None, ErrorCode.UNKNOWN_TOPIC_ID)]
    assert results[0].topic_id == ids["a"]
    assert set(node.image.topics) == {"c"}


def test_delete_same_topic_by_name_and_id_writes_one_record(node):
    [created] = create(node, CreatableTopic("a"))
    result = node.controller.delete_topics(["a"], [created.topic_id])
    assert len(result.records) == 1


def test_delete_disabled(tmp_path):
    node = start_node(tmp_path, delete_topic_enable=False)
    create(node, CreatableTopic("a"))
    [result] = node.commit(node.controller.delete_topics(["a"]), NOW)
    assert result.error == ErrorCode.TOPIC_DELETION_DISABLED and "a" in node.image.topics


def test_create_partitions(cluster):
    create(cluster, CreatableTopic("t", 2, 2))
    results = cluster.commit(cluster.controller.create_partitions([
        PartitionsIncrease("t", 4), PartitionsIncrease("nope", 3)]), NOW)
    assert [r.error for r in results] == [ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert sorted(cluster.image.topics["t"].partitions) == [0, 1, 2, 3]
    assert all(len(p.replicas) == 2 for p in cluster.image.topics["t"].partitions.values())
    [manual] = cluster.commit(cluster.controller.create_partitions([PartitionsIncrease("t", 5, [[3, 2]])]), NOW)
    assert manual.error == ErrorCode.NONE and cluster.image.partition("t", 4).replicas == (3, 2)


@pytest.mark.parametrize("increase,code,fragment", [
    (PartitionsIncrease("t", 1), ErrorCode.INVALID_PARTITIONS, "would not be an increase"),
    (PartitionsIncrease("t", 2), ErrorCode.INVALID_PARTITIONS, "already has 2 partition(s)"),
    (PartitionsIncrease("t", 4, [[1, 2]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "only 1 assignment(s)"),
    (PartitionsIncrease("t", 3, [[1]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "not consistent"),
    (PartitionsIncrease("t", 3, [[1, 7]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "no such broker"),
])
def test_create_partitions_errors(cluster, increase, code, fragment):
    create(cluster, CreatableTopic("t", 2, 2))
    before = cluster.image
    [result] = cluster.commit(cluster.controller.create_partitions([increase]), NOW)
    assert result.error == code and fragment in result.message
    assert cluster.image is before


def test_create_partitions_validate_only(cluster):
    create(cluster, CreatableTopic("t", 1, 1))
    [result] = cluster.commit(cluster.controller.create_partitions([PartitionsIncrease("t", 3)], True), NOW)
    assert result.error == ErrorCode.NONE and len(cluster.image.topics["t"].partitions) == 1
