"""Who may change configs through a controller listener (AlterConfigs, IncrementalAlterConfigs).

The brokers forward clients' changes there, authorized on the broker, with CLUSTER_ACTION of
their own; an operator sends them directly (`gregor configs --bootstrap-controller`, KIP-919).
A principal with CLUSTER_ACTION on the cluster (a node, a super user, the in-process broker) is
served as before. Any other is authorized per resource as Kafka's ControllerApis do: ALTER_CONFIGS
on the cluster for broker resources, on the topic or group for theirs; a refused resource is
answered with CLUSTER_, TOPIC_ or GROUP_AUTHORIZATION_FAILED beside the controller's answers for
the others, and the connection stays open.
"""

from __future__ import annotations

import copy
from typing import Any, Awaitable, cast

from gregor.broker.handlers import Handler, QuorumContext
from gregor.broker.handlers.forward_authorization import MESSAGES, alter_config_refusal
from gregor.metadata.acls import CLUSTER_NAME, AclOperation, ResourceType
from gregor.protocol.messages import AlterConfigsResponse, IncrementalAlterConfigsResponse

_ANSWERS: dict[int, Any] = {33: AlterConfigsResponse, 44: IncrementalAlterConfigsResponse}


def authorized(handler: Handler[QuorumContext]) -> Handler[QuorumContext]:
    """`handler` (one of the two config-changing APIs) behind the checks of the module docstring."""
    answer_class = _ANSWERS[handler.api_key]

    async def handle(context: QuorumContext, request: Any) -> Any:
        authorizer, connection = context.quorum.authorizer, context.connection
        if authorizer.allowed(connection, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            return await _answer(handler, context, request)
        refused, kept = [], copy.copy(request)
        kept.resources = []
        for resource in request.resources:
            code = alter_config_refusal(lambda op, kind, name: authorizer.allowed(connection, op, kind, name),
                                        resource)
            if code is None:
                kept.resources.append(resource)
            else:
                refused.append(answer_class.AlterConfigsResourceResponse(
                    error_code=code, error_message=MESSAGES[code], resource_type=resource.resource_type,
                    resource_name=resource.resource_name))
        answer = await _answer(handler, context, kept) if kept.resources else answer_class(throttle_time_ms=0,
                                                                                           responses=[])
        answer.responses.extend(refused)
        return answer

    return Handler(handler.api_key, handler.min_version, handler.max_version, handle,
                   handler.unsupported_version_response)


def _answer(handler: Handler[QuorumContext], context: QuorumContext, request: Any) -> Awaitable[Any]:
    """The config handlers are coroutines (they wait for the quorum to commit)."""
    return cast(Awaitable[Any], handler.handle(context, request))
