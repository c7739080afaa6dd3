"""DescribeTopicPartitions (75), ListConfigResources (74) and Produce v13 through a real one-node
broker's dispatcher, as Kafka 4.1 answers them: DescribeTopicPartitions pages by partitions with
Kafka's cursor rules; ListConfigResources lists the resources of the types asked; Produce v13 names
topics by id."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from gregor.broker.server import Broker
from gregor.protocol.error_codes import ErrorCode as E
from gregor.protocol.messages import (
    CreateTopicsRequest, DescribeTopicPartitionsRequest, IncrementalAlterConfigsRequest, ListConfigResourcesRequest,
    ProduceRequest,
)
from tests.unit.broker.test_authorization_matrix import ADMIN, Node, _config
from tests.unit.storage.helpers import batch

_Cursor = DescribeTopicPartitionsRequest.Cursor
TOPICS = {"a": 3, "b": 2, "c": 1}


def _describe(names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> Any:
    return DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name=name) for name in names],
        response_partition_limit=limit,
        cursor=_Cursor(topic_name=cursor[0], partition_index=cursor[1]) if cursor else None)


def _pages(response: Any) -> tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]:
    cursor = response.next_cursor
    return ([(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in response.topics],
            (cursor.topic_name, cursor.partition_index) if cursor is not None else None)


async def _run(tmp_path) -> dict[str, Any]:
    broker = Broker(_config(tmp_path, **{"max.request.partition.size.limit": "4"}))
    await broker.start()
    try:
        node = Node(broker)
        created = await node.call(ADMIN, CreateTopicsRequest(timeout_ms=5000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=count, replication_factor=1)
            for name, count in TOPICS.items()]), 5)
        assert [t.error_code for t in created.topics] == [0, 0, 0]
        altered = await node.call(ADMIN, IncrementalAlterConfigsRequest(resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=32, resource_name="g1", configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(
                    name="consumer.session.timeout.ms", config_operation=0, value="50000")])]), 1)
        assert [r.error_code for r in altered.responses] == [0]
        named = ["c", "a", "b", "a"]
        answers = {
            "page 1": await node.call(ADMIN, _describe(named, limit=2), 0),
            "page 2": await node.call(ADMIN, _describe(named, limit=2, cursor=("a", 2)), 0),
            "page 3": await node.call(ADMIN, _describe(named, limit=2, cursor=("b", 1)), 0),
            "exact fill": await node.call(ADMIN, _describe(named, limit=3), 0),
            "capped": await node.call(ADMIN, _describe(named, limit=100), 0),
            "all from a": await node.call(ADMIN, _describe([], limit=100, cursor=("a", 1)), 0),
            "unknown": await node.call(ADMIN, _describe(["a", "nope", "bad/name"]), 0),
            "cursor not named": await node.call(ADMIN, _describe(["a"], cursor=("b", 0)), 0),
            "negative cursor": await node.call(ADMIN, _describe(["a"], cursor=("a", -1)), 0),
        }
        for version, types in (("v1 all", []), ("v1 topics and groups", [2, 32]), ("v1 brokers", [4]),
                               ("v1 unsupported", [2, 64])):
            answers[version] = await node.call(ADMIN, ListConfigResourcesRequest(resource_types=types), 1)
        answers["v0"] = await node.call(ADMIN, ListConfigResourcesRequest(), 0)
        topic_id = broker.metadata.image.topics["b"].topic_id
        answers["produce v13"] = await node.call(ADMIN, ProduceRequest(acks=1, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(topic_id=topic_id, partition_data=[
                ProduceRequest.PartitionProduceData(index=1, records=batch(3))]),
            ProduceRequest.TopicProduceData(topic_id=uuid.uuid4(), partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=batch())])]), 13)
        answers["b end offset"] = broker.partitions.partition("b", 1).log.log_end_offset
        answers["b id"] = topic_id
        return answers
    finally:
        await broker.stop()


def test_kafka_41_apis_answer_as_kafka(tmp_path):
    answers = asyncio.run(_run(tmp_path))
    # named topics are deduplicated and sorted; at most `limit` partitions, the cursor says where to go on
    assert _pages(answers["page 1"]) == ([("a", 0, [0, 1])], ("a", 2))
    assert _pages(answers["page 2"]) == ([("a", 0, [2]), ("b", 0, [0])], ("b", 1))
    assert _pages(answers["page 3"]) == ([("b", 0, [1]), ("c", 0, [0])], None)
    # a topic ending exactly at the limit: the cursor is the next topic's partition 0
    assert _pages(answers["exact fill"]) == ([("a", 0, [0, 1, 2])], ("b", 0))
    # response_partition_limit is capped to max.request.partition.size.limit (4 here)
    assert _pages(answers["capped"]) == ([("a", 0, [0, 1, 2]), ("b", 0, [0])], ("b", 1))
    # every topic from the cursor's on (the internal ones sort before "a")
    assert _pages(answers["all from a"]) == ([("a", 0, [1, 2]), ("b", 0, [0, 1])], ("c", 0))
    assert _pages(answers["unknown"]) == ([("a", 0, [0, 1, 2]), ("bad/name", E.INVALID_TOPIC_EXCEPTION, []),
                                           ("nope", E.UNKNOWN_TOPIC_OR_PARTITION, [])], None)
    assert _pages(answers["cursor not named"]) == ([("a", E.INVALID_REQUEST, [])], None)
    assert _pages(answers["negative cursor"]) == ([("a", E.INVALID_REQUEST, [])], None)
    partition = answers["page 1"].topics[0].partitions[0]
    assert (partition.leader_id, partition.replica_nodes, partition.isr_nodes, partition.eligible_leader_replicas,
            partition.last_known_elr) == (1, [1], [1], [], [])
    assert answers["page 1"].topics[0].topic_authorized_operations > 0

    def listed(response: Any) -> tuple[int, list[tuple[int, str]]]:
        return response.error_code, [(r.resource_type, r.resource_name) for r in response.config_resources]

    code, resources = listed(answers["v1 all"])
    assert code == 0
    assert resources[:2] == [(32, "g1"), (4, "1")]
    assert [name for kind, name in resources if kind == 2][-3:] == ["a", "b", "c"]
    assert listed(answers["v1 topics and groups"])[1] == [
        (32, "g1"), *[(2, name) for kind, name in resources if kind == 2]]
    assert listed(answers["v1 brokers"]) == (0, [(4, "1")])
    assert listed(answers["v1 unsupported"]) == (E.UNSUPPORTED_VERSION, [])
    assert listed(answers["v0"]) == (0, [])

    # Produce v13 names its topics by id; an id the broker does not know is UNKNOWN_TOPIC_ID
    known, unknown = answers["produce v13"].responses
    assert (known.topic_id, known.partition_responses[0].index, known.partition_responses[0].error_code,
            known.partition_responses[0].base_offset) == (answers["b id"], 1, 0, 0)
    assert answers["b end offset"] == 3
    assert unknown.partition_responses[0].error_code == E.UNKNOWN_TOPIC_ID
