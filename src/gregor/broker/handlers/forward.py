"""Requests a broker-only node passes to the active controller (Kafka's forwarding, KIP-590).

Topic and config changes, leader elections, partition reassignments, feature levels and DescribeQuorum are the
controller's to answer. A broker-only node sends them on, at the version the client used, to
whichever voter leads the quorum (retrying NOT_CONTROLLER answers and lost connections) and
relays the answer. Kafka wraps the request in an Envelope so that the controller sees the
client's principal; Gregor authorizes the request on the broker first (`forward_authorization`)
and forwards what passed, as it came. When no
controller answers within the request's own timeout, every item gets REQUEST_TIMED_OUT, which
clients retry.
"""

from __future__ import annotations

from typing import Any, Callable

from gregor.broker.handlers import (
    BrokerContext, Handler, QuorumContext, alter_client_quotas, alter_partition_reassignments,
    alter_user_scram_credentials, create_acls, delete_acls, elect_leaders, list_partition_reassignments,
    update_features,
)
from gregor.broker.handlers import alter_listener_stores, mutation_quota
from gregor.broker.handlers.forward_authorization import screen
from gregor.broker.network import Throttled
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import (
    AlterConfigsRequest, AlterConfigsResponse, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, Message,
)
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse

DEFAULT_TIMEOUT_MS = 30_000


def _create_topics(request: CreateTopicsRequest, code: int, message: str) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=[CreateTopicsResponse.CreatableTopicResult(
        name=topic.name, error_code=code, error_message=message, num_partitions=-1, replication_factor=-1)
        for topic in request.topics])


def _delete_topics(request: DeleteTopicsRequest, code: int, message: str) -> DeleteTopicsResponse:
    named = [(name, None) for name in request.topic_names] + [(t.name, t.topic_id) for t in request.topics]
    result = DeleteTopicsResponse.DeletableTopicResult
    return DeleteTopicsResponse(responses=[
        result(name=name, error_code=code, error_message=message) if topic_id is None
        else result(name=name, topic_id=topic_id, error_code=code, error_message=message)
        for name, topic_id in named])


def _create_partitions(request: CreatePartitionsRequest, code: int, message: str) -> CreatePartitionsResponse:
    return CreatePartitionsResponse(results=[CreatePartitionsResponse.CreatePartitionsTopicResult(
        name=topic.name, error_code=code, error_message=message) for topic in request.topics])


def _alter_configs(request: AlterConfigsRequest, code: int, message: str) -> AlterConfigsResponse:
    return AlterConfigsResponse(responses=[AlterConfigsResponse.AlterConfigsResourceResponse(
        error_code=code, error_message=message, resource_type=resource.resource_type,
        resource_name=resource.resource_name) for resource in request.resources])


def _incremental_alter_configs(request: IncrementalAlterConfigsRequest, code: int,
                               message: str) -> IncrementalAlterConfigsResponse:
    return IncrementalAlterConfigsResponse(responses=[IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
        error_code=code, error_message=message, resource_type=resource.resource_type,
        resource_name=resource.resource_name) for resource in request.resources])


def _describe_quorum(request: DescribeQuorumRequest, code: int, message: str) -> DescribeQuorumResponse:
    return DescribeQuorumResponse(error_code=code, error_message=message)


ERROR_ANSWERS: dict[int, Callable[[Any, int, str], Any]] = {
    CreateTopicsRequest.API_KEY: _create_topics,
    DeleteTopicsRequest.API_KEY: _delete_topics,
    CreatePartitionsRequest.API_KEY: _create_partitions,
    AlterConfigsRequest.API_KEY: _alter_configs,
    IncrementalAlterConfigsRequest.API_KEY: _incremental_alter_configs,
    DescribeQuorumRequest.API_KEY: _describe_quorum,
    elect_leaders.API_KEY: elect_leaders.error_response,
    alter_partition_reassignments.API_KEY: alter_partition_reassignments.error_response,
    list_partition_reassignments.API_KEY: list_partition_reassignments.error_response,
    create_acls.API_KEY: create_acls.error_response,
    delete_acls.API_KEY: delete_acls.error_response,
    alter_client_quotas.API_KEY: alter_client_quotas.error_response,
    alter_user_scram_credentials.API_KEY: alter_user_scram_credentials.error_response,
    update_features.API_KEY: update_features.error_response,
}


async def _forward(context: BrokerContext, request: Any) -> Message | Throttled:
    error_answer = ERROR_ANSWERS[request.API_KEY]
    screened = screen(context, request, error_answer)
    if screened.request is None:
        return screened.merged(screened.refused.pop(0))
    request = screened.request
    if request.API_KEY in alter_listener_stores.SCREENED:
        request, refused = alter_listener_stores.screen(context, request, error_answer)
        screened.refused.extend(refused)
        screened.response_list = "responses"
        if request is None:
            return screened.merged(screened.refused.pop(0))
    if request.API_KEY in mutation_quota.SCREENED:
        original = request
        request, refused = mutation_quota.screen(context, original, error_answer)
        screened.refused.extend(refused)
        screened.response_list = mutation_quota.response_list(original.API_KEY)
        if request is None:
            return mutation_quota.throttled(context, original, screened.merged(screened.refused.pop(0)))
    timeout_ms = getattr(request, "timeout_ms", DEFAULT_TIMEOUT_MS) or DEFAULT_TIMEOUT_MS
    try:
        answer = await context.controller.send_to_controller(request, context.version, timeout_ms / 1000)
    except KafkaError as error:
        answer = error_answer(request, error.code, str(error))
    if request.API_KEY in alter_listener_stores.SCREENED:
        alter_listener_stores.reload_after(alter_listener_stores.broker_node(context), request, answer)
    if request.API_KEY in mutation_quota.SCREENED:
        return mutation_quota.throttled(context, request, screened.merged(answer))
    return screened.merged(answer)


def forwarding(handler: Handler[QuorumContext]) -> Handler[BrokerContext]:
    """The handler's API and versions, answered by the active controller."""
    return Handler(handler.api_key, handler.min_version, handler.max_version, _forward)


FORWARDED = frozenset(ERROR_ANSWERS)
