"""ClusterMetadata, sans-IO: bootstrap nodes, merging responses, routing by leader, refresh timing."""

from __future__ import annotations

import math
import uuid

from gregor.client.network.cluster import ClusterMetadata, Node, TopicPartition
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import MetadataResponse

TOPIC_ID = uuid.UUID(int=42)


def topic(name: str, leaders: list[int], error: int = ErrorCode.NONE) -> MetadataResponse.MetadataResponseTopic:
    return MetadataResponse.MetadataResponseTopic(name=name, error_code=error, topic_id=TOPIC_ID, partitions=[
        MetadataResponse.MetadataResponsePartition(partition_index=index, leader_id=leader, leader_epoch=3,
                                                   replica_nodes=[1, 2], isr_nodes=[leader])
        for index, leader in enumerate(leaders)])


def response(*topics, brokers=(1, 2)) -> MetadataResponse:
    return MetadataResponse(
        cluster_id="c", controller_id=2, topics=list(topics),
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=node, host=f"b{node}", port=9000 + node, rack="r")
                 for node in brokers])


def test_bootstrap_servers_are_nodes_with_negative_ids_until_the_first_response():
    cluster = ClusterMetadata([("a", 1), ("b", 2)], max_age_ms=1000)
    assert [(node.node_id, node.host) for node in cluster.brokers.values()] == [(-1, "a"), (-2, "b")]
    cluster.update(response(), 0, [])
    assert sorted(cluster.brokers) == [1, 2] and cluster.bootstrapped
    assert (cluster.controller_id, cluster.cluster_id, cluster.brokers[1].rack) == (2, "c", "r")


def test_a_partial_response_merges_and_a_full_one_replaces():
    cluster = ClusterMetadata([("a", 1)], max_age_ms=1000)
    cluster.update(response(topic("t1", [1]), topic("t2", [2])), 0, None)
    cluster.update(response(topic("t1", [2, 1])), 1, ["t1"])
    assert sorted(cluster.topics) == ["t1", "t2"]
    t1 = cluster.topics["t1"]
    assert (t1.topic_id, len(t1.partitions), t1.partitions[0].leader, t1.partitions[0].leader_epoch) == (TOPIC_ID, 2, 2, 3)
    cluster.update(response(topic("t2", [1])), 2, None)
    assert sorted(cluster.topics) == ["t2"]


def test_a_topic_error_removes_the_topic_and_is_remembered():
    cluster = ClusterMetadata([("a", 1)], max_age_ms=1000)
    cluster.update(response(topic("t", [1])), 0, None)
    cluster.update(response(topic("t", [], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)), 1, ["t"])
    assert "t" not in cluster.topics and cluster.topic_errors == {"t": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_group_by_leader_names_what_cannot_be_routed():
    cluster = ClusterMetadata([("a", 1)], max_age_ms=1000)
    cluster.update(response(topic("t", [1, 2, -1, 7]), topic("bad", [], ErrorCode.INVALID_TOPIC_EXCEPTION)), 0, None)
    by_leader, errors = cluster.group_by_leader([("t", 0), ("t", 1), ("t", 2), ("t", 3), ("t", 9), ("u", 0),
                                                 ("bad", 0), ("t", 4)])
    assert by_leader == {1: [TopicPartition("t", 0)], 2: [TopicPartition("t", 1)]}
    assert errors == {("t", 2): ErrorCode.LEADER_NOT_AVAILABLE, ("t", 3): ErrorCode.LEADER_NOT_AVAILABLE,
                      ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("u", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      ("bad", 0): ErrorCode.INVALID_TOPIC_EXCEPTION, ("t", 4): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_refresh_timing_asked_backed_off_and_aged():
    cluster = ClusterMetadata([("a", 1)], max_age_ms=1000)
    assert cluster.ms_until_refresh(0, backoff_ms=100) == math.inf
    cluster.request_update()
    assert cluster.ms_until_refresh(0, backoff_ms=100) == 0
    cluster.record_failure(now_ms=10)
    assert cluster.ms_until_refresh(50, backoff_ms=100) == 60 and cluster.failed_attempts == 1
    cluster.update(response(), 200, [])
    assert not cluster.update_requested and cluster.failed_attempts == 0
    assert cluster.ms_until_refresh(700, backoff_ms=100) == 500
    assert cluster.ms_until_refresh(1300, backoff_ms=100) == 0


def test_coordinator_addresses_stay_known_beside_the_brokers():
    cluster = ClusterMetadata([("a", 1)], max_age_ms=1000)
    cluster.update(response(), 0, [])
    cluster.add_node(Node(5, "coord", 9005))
    cluster.add_node(Node(1, "elsewhere", 1))
    assert cluster.node(5).host == "coord" and cluster.node(1).host == "b1"


def test_updates_swap_in_new_maps_so_another_thread_never_sees_a_half_filled_one():
    """The consumer's application thread matches its pattern against `topics` while the network
    thread applies responses: a map it holds must never be emptied and refilled under it (that
    flipped a pattern subscription between no topics and its topics, rejoining forever)."""
    cluster = ClusterMetadata([("a", 1)], max_age_ms=1000)
    cluster.update(response(topic("t1", [1]), topic("t2", [2])), 0, None)
    held_topics, held_errors = cluster.topics, cluster.topic_errors
    cluster.update(response(topic("t1", [1]), topic("t3", [1], ErrorCode.TOPIC_AUTHORIZATION_FAILED)), 1, None)
    assert sorted(held_topics) == ["t1", "t2"] and held_errors == {}
    assert sorted(cluster.topics) == ["t1"] and cluster.topic_errors == {"t3": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    partial_before = cluster.topics
    cluster.update(response(topic("t4", [2])), 2, ["t4"])
    assert sorted(partial_before) == ["t1"] and sorted(cluster.topics) == ["t1", "t4"]
