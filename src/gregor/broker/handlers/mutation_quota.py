"""The controller mutation quota (KIP-599) on the requests that create or delete partitions,
applied by the broker that takes them, before they are forwarded (the broker knows the client's
principal and client id; Kafka's controller learns them from the forwarding Envelope). See
`controller_mutation_quota` for the rules; validate-only requests are neither counted nor refused.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from gregor.broker.client_quotas import user_of
from gregor.broker.handlers import BrokerContext
from gregor.broker.network import Throttled
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest

ErrorAnswer = Callable[[Any, int, str], Any]
MESSAGE = "The throttling quota has been exceeded."
#: First version answered THROTTLING_QUOTA_EXCEEDED (strict); older ones are only throttled.
STRICT_SINCE = {CreateTopicsRequest.API_KEY: 6, CreatePartitionsRequest.API_KEY: 3, DeleteTopicsRequest.API_KEY: 5}
#: Where each request lists its topics, and where its answer lists them.
_LISTS = {CreateTopicsRequest.API_KEY: (("topics",), "topics"),
          CreatePartitionsRequest.API_KEY: (("topics",), "results"),
          DeleteTopicsRequest.API_KEY: (("topic_names", "topics"), "responses")}
SCREENED = frozenset(STRICT_SINCE)


def response_list(api_key: int) -> str:
    return _LISTS[api_key][1]


def _partitions_of(context: BrokerContext, name: str | None) -> int:
    topic = context.metadata.image.topics.get(name) if name is not None else None
    return len(topic.partitions) if topic is not None else 0


def _mutations(context: BrokerContext, api_key: int, item: Any) -> int:
    """Partitions the topic's creation, extension or deletion creates or deletes."""
    if api_key == CreateTopicsRequest.API_KEY:
        if item.num_partitions > 0:
            return int(item.num_partitions)
        return len(item.assignments) if item.assignments else int(context.metadata.config.get("num.partitions"))
    if api_key == CreatePartitionsRequest.API_KEY:
        return max(int(item.count) - _partitions_of(context, item.name), 0)
    if isinstance(item, str):
        return _partitions_of(context, item)
    name = item.name if item.name is not None else context.metadata.topic_name(item.topic_id)
    return _partitions_of(context, name)


def _counted(context: BrokerContext, request: Any) -> bool:
    return context.quotas.enabled and not getattr(request, "validate_only", False)


def screen(context: BrokerContext, request: Any, error_answer: ErrorAnswer) -> tuple[Any | None, list[Any]]:
    """(what is left to forward, None for nothing; the answers of the topics refused)."""
    if not _counted(context, request):
        return request, []
    api_key = request.API_KEY
    strict = context.version >= STRICT_SINCE[api_key]
    quota = context.quotas.controller_mutation
    user, client_id = user_of(context.connection.principal), context.header.client_id or ""
    attributes, _ = _LISTS[api_key]
    kept, refused_part = copy.copy(request), copy.copy(request)
    refused_any = False
    for attribute in attributes:
        allowed: list[Any] = []
        refused: list[Any] = []
        for item in getattr(request, attribute) or []:
            admitted = quota.admit(user, client_id, _mutations(context, api_key, item), strict, context.now_ms)
            (allowed if admitted else refused).append(item)
        setattr(kept, attribute, allowed)
        setattr(refused_part, attribute, refused)
        refused_any = refused_any or bool(refused)
    if not refused_any:
        return request, []
    answers = [error_answer(refused_part, ErrorCode.THROTTLING_QUOTA_EXCEEDED, MESSAGE)]
    left = any(getattr(kept, attribute) for attribute in attributes)
    return (kept if left else None), answers


def throttled(context: BrokerContext, request: Any, answer: Any) -> Any:
    """The answer with the client's throttle time, muting the connection that long."""
    if not _counted(context, request):
        return answer
    throttle_ms = context.quotas.controller_mutation.throttle_ms(
        user_of(context.connection.principal), context.header.client_id or "", context.now_ms)
    if not throttle_ms:
        return answer
    answer.throttle_time_ms = max(getattr(answer, "throttle_time_ms", 0) or 0, throttle_ms)
    return Throttled(answer, throttle_ms)
