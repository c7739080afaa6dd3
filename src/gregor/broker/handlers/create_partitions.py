"""CreatePartitions (key 37), v0–v3: increase a topic's partition count."""

from __future__ import annotations

from gregor.broker.handlers import Handler, RequestContext
from gregor.protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse

API_KEY = 37


def handle(context: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    broker = context.broker
    results = []
    for topic in request.topics:
        assignments = [list(a.broker_ids) for a in topic.assignments] if topic.assignments else None
        outcome = broker.controller.create_partitions(broker.image, topic.name, topic.count, assignments)
        if not outcome.error and not request.validate_only:
            broker.commit_outcome(outcome)
        results.append(CreatePartitionsResponse.CreatePartitionsTopicResult(
            name=topic.name, error_code=outcome.error, error_message=outcome.message))
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)


HANDLERS = [Handler(API_KEY, 0, 3, handle)]
