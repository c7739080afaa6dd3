"""CreateTopics (key 19), v0–v7: validated by the controller, applied through the metadata log."""

from __future__ import annotations

from gregor.broker.handlers import Handler, RequestContext
from gregor.metadata.topic_configs import effective_topic_config
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import CreateTopicsRequest, CreateTopicsResponse

API_KEY = 19
_Result = CreateTopicsResponse.CreatableTopicResult
_Config = CreateTopicsResponse.CreatableTopicConfigs
TOPIC_CONFIG_SOURCE, DEFAULT_CONFIG_SOURCE = 1, 5


def handle(context: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    broker = context.broker
    results = []
    seen = set()
    for topic in request.topics:
        if topic.name in seen:
            results.append(_Result(name=topic.name, error_code=ErrorCode.INVALID_REQUEST,
                                   error_message="topic named twice in one request",
                                   num_partitions=-1, replication_factor=-1))
            continue
        seen.add(topic.name)
        assignments = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
        configs = {c.name: c.value for c in topic.configs}
        outcome = broker.create_topic(topic.name, topic.num_partitions, topic.replication_factor,
                                      assignments, configs, request.validate_only)
        result = _Result(name=topic.name, error_code=outcome.error, error_message=outcome.message,
                         num_partitions=-1, replication_factor=-1)
        if not outcome.error:
            if outcome.topic_id is not None:
                result.topic_id = outcome.topic_id
            image_topic = broker.image.topics.get(topic.name)
            if image_topic is not None:
                result.num_partitions = len(image_topic.partitions)
                result.replication_factor = len(next(iter(image_topic.partitions.values())).replicas)
            else:
                result.num_partitions = outcome.value
                result.replication_factor = (topic.replication_factor if topic.replication_factor > 0
                                             else broker.config.get("default.replication.factor"))
            values = effective_topic_config({k: v for k, v in configs.items() if v is not None},
                                            broker.config.topic_defaults())
            result.configs = [_Config(name=name, value=value, read_only=False,
                                      config_source=TOPIC_CONFIG_SOURCE if override else DEFAULT_CONFIG_SOURCE,
                                      is_sensitive=False)
                              for name, (value, override) in sorted(values.items())]
        results.append(result)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


HANDLERS = [Handler(API_KEY, 0, 7, handle)]
