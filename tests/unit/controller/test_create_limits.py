"""Topic creations the controller refuses to protect the cluster, as Kafka's controller does: more
than 10,000 partitions in one CreateTopics or CreatePartitions (POLICY_VIOLATION, before any is
placed; the wire fuzzer found one topic of 2**31-1 partitions exhausting the broker's memory), and
a topic named `__cluster_metadata`."""

from __future__ import annotations

import tracemalloc

from gregor.controller.operations import CreatableTopic, PartitionsIncrease
from gregor.protocol.error_codes import ErrorCode
from tests.unit.controller.conftest import NOW


def test_a_topic_of_two_billion_partitions_is_refused_without_allocating_them(node):
    tracemalloc.start()
    try:
        result = node.controller.create_topics([CreatableTopic("huge", 2**31 - 1, 1)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [refused] = result.response
    assert (refused.error, refused.message) == (ErrorCode.POLICY_VIOLATION,
                                                "Excessively large number of partitions per request.")
    assert result.records == () and peak < 1 << 20


def test_the_limit_counts_every_topic_of_the_request_and_refuses_them_all(node):
    results = node.commit(node.controller.create_topics([
        CreatableTopic("a", 5000, 1), CreatableTopic("b", 5000, 1), CreatableTopic("c", 1, 1)]), NOW)
    assert [r.error for r in results] == [ErrorCode.POLICY_VIOLATION] * 3
    assert not {"a", "b", "c"} & set(node.image.topics)
    [ok] = node.commit(node.controller.create_topics([CreatableTopic("d", 3, 1)]), NOW)
    assert ok.error == ErrorCode.NONE


def test_create_partitions_over_the_limit_is_refused_too(node):
    node.commit(node.controller.create_topics([CreatableTopic("t", 1, 1)]), NOW)
    [refused] = node.commit(node.controller.create_partitions([PartitionsIncrease("t", 2**31 - 1)]), NOW)
    assert refused.error == ErrorCode.POLICY_VIOLATION
    assert len(node.image.topics["t"].partitions) == 1


def test_the_metadata_log_cannot_be_created_as_a_topic(node):
    """Kafka's ControllerApis refuses it; here its partition directory would be the metadata log's."""
    [refused] = node.commit(node.controller.create_topics([CreatableTopic("__cluster_metadata", 1, 1)]), NOW)
    assert (refused.error, refused.message) == (ErrorCode.INVALID_REQUEST,
                                                "Creation of internal topic __cluster_metadata is prohibited.")
    assert "__cluster_metadata" not in node.image.topics
