"""DescribeTopicPartitions (key 75, KIP-966), v0: Metadata's topic answer, paged by partitions.

As Kafka's DescribeTopicPartitionsRequestHandler and metadata cache answer it: the topics named
(or every topic, when none is named) from the cursor's topic on, deduplicated and sorted by name;
a named topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED (after the
others, as Kafka appends them), one left out of an all-topics answer; a named topic that does not
exist is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name). At most
`response_partition_limit` partitions are answered, capped to `max.request.partition.size.limit`
and at least one; when partitions are left, `next_cursor` names the topic and partition to go on
from (partition 0 of the next topic when a topic ended exactly at the limit). A cursor whose
partition is negative, or (with topics named) whose topic is not among them, makes the request
INVALID_REQUEST, answered for each named topic. Gregor keeps no eligible leader replicas (KIP-966
ELR): both ELR lists are empty.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.authorized_operations import authorized_operations
from gregor.broker.handlers.metadata import INTERNAL_TOPICS, ZERO_UUID
from gregor.broker.handlers.partition_leadership import partition_fields
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse

API_KEY = 75
MIN_VERSION, MAX_VERSION = 0, 0

_Topic = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
_Partition = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition
_Cursor = DescribeTopicPartitionsResponse.Cursor


def handle(context: BrokerContext, request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    cursor = request.cursor
    after = cursor.topic_name if cursor is not None else ""
    every_topic = not request.topics
    names = context.metadata.image.topics if every_topic else {topic.name for topic in request.topics}
    wanted = sorted(name for name in names if name >= after)
    if cursor is not None and (cursor.partition_index < 0 or (not every_topic and cursor.topic_name not in wanted)):
        return _invalid(request)
    described = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, wanted)
    limit = max(min(context.metadata.config.get("max.request.partition.size.limit"),
                    request.response_partition_limit), 1)
    response = _describe(context, [name for name in wanted if name in described], cursor, limit, every_topic)
    if not every_topic:
        response.topics.extend(_Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID,
                                      partitions=[]) for name in wanted if name not in described)
    return response


def _describe(context: BrokerContext, names: list[str], cursor: DescribeTopicPartitionsRequest.Cursor | None,
              limit: int, every_topic: bool) -> DescribeTopicPartitionsResponse:
    """Kafka's metadata cache walk: topics in order until `limit` partitions are answered, each
    with the operations the principal may perform on it."""
    metadata = context.metadata
    response = DescribeTopicPartitionsResponse(throttle_time_ms=0, topics=[])
    remaining = limit
    for name in names:
        if remaining == 0:
            response.next_cursor = _Cursor(topic_name=name, partition_index=0)
            break
        topic_image = metadata.image.topics.get(name)
        operations = authorized_operations(context, ResourceType.TOPIC, name)
        if topic_image is None:
            if not every_topic:
                code = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if metadata.is_valid_topic_name(name)
                        else ErrorCode.INVALID_TOPIC_EXCEPTION)
                response.topics.append(_Topic(error_code=code, name=name, topic_id=ZERO_UUID,
                                              is_internal=name in INTERNAL_TOPICS, partitions=[],
                                              topic_authorized_operations=operations))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        count = len(topic_image.partitions)
        end = min(count, start + remaining)
        partitions = [_Partition(**partition_fields(index, topic_image.partitions[index]),
                                 eligible_leader_replicas=[], last_known_elr=[])
                      for index in range(start, end) if index in topic_image.partitions]
        response.topics.append(_Topic(error_code=ErrorCode.NONE, name=name, topic_id=topic_image.topic_id,
                                      is_internal=name in INTERNAL_TOPICS, partitions=partitions,
                                      topic_authorized_operations=operations))
        if end < count:
            response.next_cursor = _Cursor(topic_name=name, partition_index=end)
            break
        remaining -= len(partitions)
    return response


def _invalid(request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    """Kafka's error response: the request's error for each topic it names."""
    return DescribeTopicPartitionsResponse(throttle_time_ms=0, topics=[
        _Topic(error_code=ErrorCode.INVALID_REQUEST, name=topic.name, topic_id=ZERO_UUID, partitions=[])
        for topic in request.topics])


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle)]
