"""AlterConfigs (key 33, v0–v2: replace a resource's set) and IncrementalAlterConfigs (key 44, v0–v1).

Topic configs take effect on the partition logs as soon as the change is committed to the
metadata log; broker configs become dynamic configs (the broker synonyms of topic configs).
A change of this controller's own listener stores (`listener.name.<listener>.ssl.*` on its node
id) is checked here first and reloads them once committed (`alter_listener_stores`).
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.broker.handlers.alter_listener_stores import Node, refusal, reload_after
from gregor.broker.services import QuorumService
from gregor.controller.operations import (
    AlterConfigOp, AlterConfigsResource, AlterConfigsResult, ConfigOp, IncrementalAlterConfigsResource,
)
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
)

_OPERATIONS = frozenset(op.value for op in AlterConfigOp)


def _node(quorum: QuorumService) -> Node:
    """This controller as the checker of listener store changes; other nodes' changes pass."""
    return Node(quorum.node_id, lambda: quorum.image.broker_config(quorum.node_id), quorum.listener_tls,
                others_pass=True)


async def handle_alter(context: QuorumContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    quorum = context.quorum
    node = _node(quorum)
    answers: dict[int, AlterConfigsResult] = {}
    valid: list[tuple[int, AlterConfigsResource]] = []
    for position, r in enumerate(request.resources):
        reason = refusal(node, r, incremental=False)
        if reason is not None:
            answers[position] = AlterConfigsResult(r.resource_type, r.resource_name, ErrorCode.INVALID_REQUEST, reason)
            continue
        valid.append((position, AlterConfigsResource(r.resource_type, r.resource_name,
                                                     {c.name: c.value for c in r.configs})))
    if valid:
        try:
            results = await quorum.submit(lambda: quorum.controller.alter_configs([r for _, r in valid],
                                                                                  request.validate_only))
        except KafkaError as error:
            results = [_refused(r.resource_type, r.resource_name, error) for _, r in valid]
        answers.update((position, result) for (position, _), result in zip(valid, results))
    response = AlterConfigsResponse(throttle_time_ms=0, responses=[
        AlterConfigsResponse.AlterConfigsResourceResponse(
            error_code=result.error, error_message=result.message, resource_type=result.resource_type,
            resource_name=result.resource_name)
        for result in (answers[i] for i in sorted(answers))])
    reload_after(node, request, response)
    return response


async def handle_incremental(context: QuorumContext,
                             request: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    quorum = context.quorum
    node = _node(quorum)
    answers: dict[int, IncrementalAlterConfigsResponse.AlterConfigsResourceResponse] = {}
    valid: list[tuple[int, IncrementalAlterConfigsResource]] = []
    for position, resource in enumerate(request.resources):
        unknown = [c.config_operation for c in resource.configs if c.config_operation not in _OPERATIONS]
        reason = f"Unknown config operation {unknown[0]}" if unknown else refusal(node, resource, incremental=True)
        if reason is not None:
            answers[position] = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
                error_code=ErrorCode.INVALID_REQUEST, error_message=reason,
                resource_type=resource.resource_type, resource_name=resource.resource_name)
            continue
        valid.append((position, IncrementalAlterConfigsResource(
            resource.resource_type, resource.resource_name,
            [ConfigOp(c.name, AlterConfigOp(c.config_operation), c.value) for c in resource.configs])))
    if valid:
        try:
            results = await quorum.submit(lambda: quorum.controller.incremental_alter_configs(
                [r for _, r in valid], request.validate_only))
        except KafkaError as error:
            results = [_refused(r.resource_type, r.resource_name, error) for _, r in valid]
        for (position, _), result in zip(valid, results):
            answers[position] = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
                error_code=result.error, error_message=result.message, resource_type=result.resource_type,
                resource_name=result.resource_name)
    response = IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=[answers[i] for i in sorted(answers)])
    reload_after(node, request, response)
    return response


def _refused(resource_type: int, resource_name: str, error: KafkaError) -> AlterConfigsResult:
    return AlterConfigsResult(resource_type, resource_name, ErrorCode(error.code), str(error))


HANDLERS = [Handler(33, 0, 2, handle_alter), Handler(44, 0, 1, handle_incremental)]
