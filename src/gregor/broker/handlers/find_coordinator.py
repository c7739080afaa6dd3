"""FindCoordinator (key 10), v0–v5: which broker coordinates a group (or transactional id).

Group keys map to the leader of their `__consumer_offsets` partition, transactional ids (key type
1) to the leader of their `__transaction_state` partition; each topic is created on the first
lookup, as Kafka does. v4+ batch keys. v6 (share groups) is not offered. A key needs DESCRIBE on
its group (GROUP_AUTHORIZATION_FAILED) or transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from gregor.broker.group_runtime import OFFSETS_TOPIC
from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.broker.transaction_runtime import TRANSACTION_TOPIC
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse

API_KEY = 10
GROUP, TRANSACTION = 0, 1
_Coordinator = FindCoordinatorResponse.Coordinator
_RESOURCES = {GROUP: ResourceType.GROUP, TRANSACTION: ResourceType.TRANSACTIONAL_ID}


def _locate(context: BrokerContext, key: str, key_type: int, topic_error: str | None) -> _Coordinator:
    metadata = context.metadata
    answer = _Coordinator(key=key, node_id=-1, host="", port=-1, error_code=ErrorCode.NONE, error_message=None)
    if key_type not in (GROUP, TRANSACTION):
        answer.error_code, answer.error_message = ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}"
        return answer
    if not key:
        answer.error_code = ErrorCode.INVALID_REQUEST
        answer.error_message = "The group id is empty." if key_type == GROUP else "The transactional id is empty."
        return answer
    if not context.allowed(AclOperation.DESCRIBE, _RESOURCES[key_type], key):
        answer.error_code = (ErrorCode.GROUP_AUTHORIZATION_FAILED if key_type == GROUP
                             else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return answer
    if topic_error is not None:
        answer.error_code, answer.error_message = ErrorCode.COORDINATOR_NOT_AVAILABLE, topic_error
        return answer
    if key_type == GROUP:
        registration = metadata.image.partition(OFFSETS_TOPIC, context.groups.coordinator.partition_for(key))
    else:
        registration = metadata.image.partition(TRANSACTION_TOPIC, context.transactions.coordinator.partition_for(key))
    node_id = registration.leader if registration is not None else -1
    endpoint = dict(metadata.endpoints_for(context.connection.listener)).get(node_id)
    if endpoint is None:
        answer.error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        answer.error_message = "The coordinator is not available."
        return answer
    answer.node_id, answer.host, answer.port = node_id, endpoint.host, endpoint.port
    return answer


def handle(context: BrokerContext, request: FindCoordinatorRequest):
    key_type = request.key_type if context.version >= 1 else GROUP
    topic = {GROUP: OFFSETS_TOPIC, TRANSACTION: TRANSACTION_TOPIC}.get(key_type)
    if topic is not None and topic not in context.metadata.image.topics:
        return _after_creating_topic(context, request, key_type)
    return _answer(context, request, None)


async def _after_creating_topic(context: BrokerContext, request: FindCoordinatorRequest,
                                key_type: int) -> FindCoordinatorResponse:
    if key_type == GROUP:
        created = await context.groups.ensure_offsets_topic()
    else:
        created = await context.transactions.ensure_topic()
    failure = created.message or created.error.name if created is not None and created.error else None
    return _answer(context, request, failure)


def _answer(context: BrokerContext, request: FindCoordinatorRequest,
            topic_error: str | None) -> FindCoordinatorResponse:
    if context.version >= 4:
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
            _locate(context, key, request.key_type, topic_error) for key in request.coordinator_keys])
    found = _locate(context, request.key, request.key_type if context.version >= 1 else GROUP, topic_error)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=found.error_code,
                                   error_message=found.error_message, node_id=found.node_id,
                                   host=found.host, port=found.port)


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
