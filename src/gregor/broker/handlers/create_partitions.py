"""CreatePartitions (key 37), v0–v3: increase a topic's partition count."""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import CreatePartitionsResult, PartitionsIncrease
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse

API_KEY = 37


async def handle(context: QuorumContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    quorum = context.quorum
    increases = [PartitionsIncrease(topic.name, topic.count,
                                    [list(a.broker_ids) for a in topic.assignments]
                                    if topic.assignments is not None else None)
                 for topic in request.topics]
    try:
        results = await quorum.submit(lambda: quorum.controller.create_partitions(increases, request.validate_only))
    except KafkaError as error:
        results = [CreatePartitionsResult(increase.name, ErrorCode(error.code), str(error)) for increase in increases]
    return CreatePartitionsResponse(throttle_time_ms=0, results=[
        CreatePartitionsResponse.CreatePartitionsTopicResult(name=result.name, error_code=result.error,
                                                             error_message=result.message)
        for result in results])


HANDLERS = [Handler(API_KEY, 0, 3, handle)]
