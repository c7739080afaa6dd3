"""Metadata (key 3), v0–v12: brokers, controller, topics and partition leadership.

Unknown topics are created when `auto.create.topics.enable` is on and the request allows it
(v4+ carries the client's wish; older versions always allow it). Creation is synchronous on a
single node, so the answer already lists the new topic's partitions; a broker-only node asks the
active controller and, until the new topic reaches its metadata, answers LEADER_NOT_AVAILABLE
for it, as Kafka does, which clients retry. v12 may name topics by id; v10 and v11 carry the
fields for it, but a topic named by id or without a name there makes the whole request
INVALID_REQUEST, answered per topic with an empty name, as Kafka's KafkaApis and
MetadataRequest.getErrorResponse answer it (found by fuzzing: the answer's null name could not be
encoded at those versions).

Authorization (Kafka's KafkaApis): a topic the principal may not DESCRIBE is left out of an
all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named (whether it exists or not);
auto-creation needs CREATE on the cluster or the topic, else TOPIC_AUTHORIZATION_FAILED. When
asked (v8+), each topic answered (not refused) carries its authorized operations, and v8–v10 the
cluster's (`authorized_operations`).
"""

from __future__ import annotations

import uuid

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.authorized_operations import OMITTED, authorized_operations
from gregor.broker.handlers.partition_leadership import partition_fields
from gregor.broker.services import MetadataView
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import MetadataRequest, MetadataResponse

API_KEY = 3
MIN_VERSION, MAX_VERSION = 0, 12

ZERO_UUID = uuid.UUID(int=0)
AUTHORIZED_OPERATIONS_OMITTED = OMITTED
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

_Broker = MetadataResponse.MetadataResponseBroker
_Topic = MetadataResponse.MetadataResponseTopic
_Partition = MetadataResponse.MetadataResponsePartition


def handle(context: BrokerContext, request: MetadataRequest):
    result = _handle(context, request)
    if not (request.include_topic_authorized_operations or request.include_cluster_authorized_operations):
        return result
    if isinstance(result, MetadataResponse):
        return _with_operations(context, request, result)

    async def after_creating() -> MetadataResponse:
        return _with_operations(context, request, await result)
    return after_creating()


def _with_operations(context: BrokerContext, request: MetadataRequest, response: MetadataResponse) -> MetadataResponse:
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = authorized_operations(context, ResourceType.CLUSTER)
    if request.include_topic_authorized_operations:
        for topic in response.topics:
            if topic.name and topic.error_code not in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_REQUEST):
                topic.topic_authorized_operations = authorized_operations(context, ResourceType.TOPIC, topic.name)
    return response


def _handle(context: BrokerContext, request: MetadataRequest):
    metadata = context.metadata
    version = context.version
    requested_topics = request.topics
    wanted: list[tuple[str | None, uuid.UUID | None]]
    if version in (10, 11) and requested_topics and any(
            topic.name is None or topic.topic_id != ZERO_UUID for topic in requested_topics):
        return MetadataResponse(throttle_time_ms=0, topics=[
            _Topic(error_code=ErrorCode.INVALID_REQUEST, name=topic.name or "", topic_id=topic.topic_id, partitions=[])
            for topic in requested_topics])
    if requested_topics is None or (version == 0 and not requested_topics):
        names = sorted(metadata.image.topics)
        described = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        wanted = [(name, None) for name in names if name in described]
    else:
        wanted = []
        for requested in requested_topics:
            if version >= 10 and requested.name is None and requested.topic_id != ZERO_UUID:
                wanted.append((metadata.topic_name(requested.topic_id), requested.topic_id))
            else:
                wanted.append((requested.name, None))
        described = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                          {name for name, _ in wanted if name is not None})
        refused = {name for name, _ in wanted if name is not None and name not in described}
        allow_auto_create = request.allow_auto_topic_creation if version >= 4 else True
        missing = [name for name, _ in wanted
                   if name is not None and name not in metadata.image.topics and name not in refused]
        if missing and allow_auto_create and metadata.config.get("auto.create.topics.enable"):
            if not context.allowed(AclOperation.CREATE):
                creatable = context.allowed_names(AclOperation.CREATE, ResourceType.TOPIC, missing)
                refused |= set(missing) - creatable
                missing = [name for name in missing if name in creatable]
            if missing:
                return _after_creating(context, wanted, missing, frozenset(refused))
        return _answer(context, wanted, frozenset(), frozenset(refused))
    return _answer(context, wanted, frozenset())


async def _after_creating(context: BrokerContext, wanted: list[tuple[str | None, uuid.UUID | None]],
                          missing: list[str], refused: frozenset[str]) -> MetadataResponse:
    await context.controller.auto_create_topics(missing)
    return _answer(context, wanted, frozenset(missing), refused)


def _answer(context: BrokerContext, wanted: list[tuple[str | None, uuid.UUID | None]],
            being_created: frozenset[str], refused: frozenset[str] = frozenset()) -> MetadataResponse:
    metadata = context.metadata
    topics = [_Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID, partitions=[],
                     topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED) if name in refused
              else _describe_topic(metadata, name, topic_id, name in being_created) for name, topic_id in wanted]
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=_brokers(metadata, context.connection.listener),
        cluster_id=metadata.image.cluster_id,
        controller_id=metadata.controller_id,
        topics=topics,
    )


def _brokers(metadata: MetadataView, listener: str) -> list[_Broker]:
    result = []
    for node_id, endpoint in metadata.endpoints_for(listener):
        result.append(_Broker(node_id=node_id, host=endpoint.host, port=endpoint.port,
                              rack=endpoint.rack))
    return result


def _describe_topic(metadata: MetadataView, name: str | None, topic_id: uuid.UUID | None,
                    being_created: bool) -> _Topic:
    topic_image = metadata.image.topics.get(name) if name is not None else None
    if topic_image is None:
        code = ErrorCode.UNKNOWN_TOPIC_ID if topic_id is not None else ErrorCode.LEADER_NOT_AVAILABLE \
            if being_created and name is not None and metadata.is_valid_topic_name(name) else (
            ErrorCode.INVALID_TOPIC_EXCEPTION if name is not None and not metadata.is_valid_topic_name(name)
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return _Topic(error_code=code, name=name, topic_id=topic_id or ZERO_UUID, partitions=[],
                      topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
    partitions = [_Partition(**partition_fields(index, registration))
                  for index, registration in sorted(topic_image.partitions.items())]
    return _Topic(error_code=ErrorCode.NONE, name=name, topic_id=topic_image.topic_id,
                  is_internal=name in INTERNAL_TOPICS, partitions=partitions,
                  topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle)]
