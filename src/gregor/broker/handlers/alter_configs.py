"""AlterConfigs (key 33, v0–v2: replace all) and IncrementalAlterConfigs (key 44, v0–v1).

Incremental operations: SET 0, DELETE 1, APPEND 2 and SUBTRACT 3 (list-typed keys only).
Topic configs take effect on the partition logs as soon as the change is in the metadata log;
broker configs are recorded as dynamic configs and shown by DescribeConfigs.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, RequestContext
from gregor.metadata.image import TOPIC_RESOURCE
from gregor.metadata.topic_configs import TOPIC_CONFIG_KEYS
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _apply(context: RequestContext, resource_type: int, resource_name: str, changes: dict[str, str | None],
           replace_all: bool, validate_only: bool):
    broker = context.broker
    outcome = broker.controller.alter_configs(broker.image, resource_type, resource_name, changes, replace_all,
                                              broker.broker_config_keys)
    if not outcome.error and not validate_only:
        broker.commit_outcome(outcome)
    return outcome


def handle_alter(context: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = []
    for resource in request.resources:
        changes = {c.name: c.value for c in resource.configs}
        outcome = _apply(context, resource.resource_type, resource.resource_name, changes, True,
                         request.validate_only)
        responses.append(AlterConfigsResponse.AlterConfigsResourceResponse(
            error_code=outcome.error, error_message=outcome.message, resource_type=resource.resource_type,
            resource_name=resource.resource_name))
    return AlterConfigsResponse(throttle_time_ms=0, responses=responses)


def handle_incremental(context: RequestContext,
                       request: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    responses = []
    for resource in request.resources:
        current = dict(context.broker.image.configs.get((resource.resource_type, resource.resource_name), {}))
        changes: dict[str, str | None] = {}
        error = None
        for config in resource.configs:
            operation = config.config_operation
            if operation == SET:
                changes[config.name] = config.value
            elif operation == DELETE:
                changes[config.name] = None
            elif operation in (APPEND, SUBTRACT):
                key = TOPIC_CONFIG_KEYS.get(config.name) if resource.resource_type == TOPIC_RESOURCE else None
                if key is None or key.type != "list":
                    error = f"{config.name} is not a list config; APPEND and SUBTRACT need one"
                    break
                base = changes.get(config.name, current.get(config.name)) or ""
                items = [i for i in base.split(",") if i]
                values = [i.strip() for i in (config.value or "").split(",") if i.strip()]
                if operation == APPEND:
                    items += [v for v in values if v not in items]
                else:
                    items = [i for i in items if i not in values]
                changes[config.name] = ",".join(items) if items else None
            else:
                error = f"unknown config operation {operation}"
                break
        if error:
            code, message = ErrorCode.INVALID_CONFIG, error
        else:
            outcome = _apply(context, resource.resource_type, resource.resource_name, changes, False,
                             request.validate_only)
            code, message = outcome.error, outcome.message
        responses.append(IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=resource.resource_type,
            resource_name=resource.resource_name))
    return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=responses)


HANDLERS = [Handler(33, 0, 2, handle_alter), Handler(44, 0, 1, handle_incremental)]
