"""DeleteTopics (key 20), v0–v6: by name, or by topic id (v6)."""

from __future__ import annotations

import uuid

from gregor.broker.handlers import Handler, RequestContext
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse

API_KEY = 20
ZERO_UUID = uuid.UUID(int=0)


def handle(context: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    broker = context.broker
    wanted: list[tuple[str | None, uuid.UUID | None]] = [(name, None) for name in request.topic_names]
    for topic in request.topics:
        if topic.name is None and topic.topic_id != ZERO_UUID:
            wanted.append((broker.topic_name(topic.topic_id), topic.topic_id))
        else:
            wanted.append((topic.name, None))
    responses = []
    for name, topic_id in wanted:
        result = DeleteTopicsResponse.DeletableTopicResult(name=name, topic_id=topic_id or ZERO_UUID)
        if name is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_ID
        elif not broker.config.get("delete.topic.enable"):
            result.error_code = ErrorCode.TOPIC_DELETION_DISABLED
        else:
            outcome = broker.commit_outcome(broker.controller.delete_topic(broker.image, name))
            result.error_code = outcome.error
            result.error_message = outcome.message
            if outcome.topic_id is not None:
                result.topic_id = outcome.topic_id
        responses.append(result)
    return DeleteTopicsResponse(throttle_time_ms=0, responses=responses)


HANDLERS = [Handler(API_KEY, 0, 6, handle)]
