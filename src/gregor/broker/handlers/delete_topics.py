"""DeleteTopics (key 20), v0–v6: by name, or by name or topic id (v6)."""

from __future__ import annotations

import uuid

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import DeleteTopicResult
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse

API_KEY = 20
ZERO_UUID = uuid.UUID(int=0)
_Result = DeleteTopicsResponse.DeletableTopicResult


async def handle(context: QuorumContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    """One result per requested topic, in request order (the controller answers names, then ids)."""
    quorum = context.quorum
    names: list[tuple[int, str]] = [(i, name) for i, name in enumerate(request.topic_names)]
    ids: list[tuple[int, uuid.UUID]] = []
    invalid: dict[int, _Result] = {}
    for i, topic in enumerate(request.topics, len(names)):
        has_id = topic.topic_id != ZERO_UUID
        if topic.name is not None and has_id:
            invalid[i] = _Result(name=topic.name, topic_id=topic.topic_id, error_code=ErrorCode.INVALID_REQUEST,
                                 error_message="A topic is named by both its name and its id; give one.")
        elif has_id:
            ids.append((i, topic.topic_id))
        elif topic.name is not None:
            names.append((i, topic.name))
        else:  # neither: what the controller answers an unknown name
            invalid[i] = _Result(name=None, topic_id=ZERO_UUID, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 error_message="This server does not host this topic-partition.")
    requested: list[tuple[int, str | uuid.UUID]] = [*names, *ids]
    try:
        results = await quorum.submit(lambda: quorum.controller.delete_topics([n for _, n in names],
                                                                             [t for _, t in ids]))
    except KafkaError as error:
        results = [DeleteTopicResult(name=None if isinstance(key, uuid.UUID) else key,
                                     topic_id=key if isinstance(key, uuid.UUID) else ZERO_UUID,
                                     error=ErrorCode(error.code), message=str(error))
                   for _, key in requested]
    answers = dict(invalid)
    for (position, _), result in zip(requested, results):
        answers[position] = _Result(name=result.name, topic_id=result.topic_id, error_code=result.error,
                                    error_message=result.message)
    return DeleteTopicsResponse(throttle_time_ms=0, responses=[answers[i] for i in sorted(answers)])


HANDLERS = [Handler(API_KEY, 0, 6, handle)]
