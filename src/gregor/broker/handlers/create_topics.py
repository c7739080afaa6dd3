"""CreateTopics (key 19), v0–v7: decided by the controller, applied through the metadata log.

Served on a broker's client listeners and on a controller's listener alike (as DeleteTopics,
CreatePartitions and the AlterConfigs pair are): the node's `submit` runs the decision where the
controller is and waits until it is committed; a node that is not (or stops being) the active
controller answers NOT_CONTROLLER for each topic, which clients retry.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import CreatableTopic, CreateTopicResult
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import CreateTopicsRequest, CreateTopicsResponse

API_KEY = 19
_Result = CreateTopicsResponse.CreatableTopicResult
_Config = CreateTopicsResponse.CreatableTopicConfigs


async def handle(context: QuorumContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    quorum = context.quorum
    topics = [CreatableTopic(topic.name, topic.num_partitions, topic.replication_factor,
                             {a.partition_index: list(a.broker_ids) for a in topic.assignments},
                             {c.name: c.value for c in topic.configs})
              for topic in request.topics]
    try:
        results = await quorum.submit(lambda: quorum.controller.create_topics(topics, request.validate_only))
    except KafkaError as error:
        results = [CreateTopicResult(topic.name, ErrorCode(error.code), str(error)) for topic in topics]
    return CreateTopicsResponse(throttle_time_ms=0, topics=[
        _Result(name=result.name, topic_id=result.topic_id, error_code=result.error,
                error_message=result.message, num_partitions=result.num_partitions,
                replication_factor=result.replication_factor,
                configs=[_Config(name=entry.name, value=entry.value, read_only=entry.read_only,
                                 config_source=entry.source, is_sensitive=entry.is_sensitive)
                         for entry in result.configs])
        for result in results])


HANDLERS = [Handler(API_KEY, 0, 7, handle)]
