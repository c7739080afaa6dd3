"""The broker's own check of listener key and trust store changes in AlterConfigs and
IncrementalAlterConfigs, before they are forwarded to the controller (Kafka's ConfigAdminManager
validates a broker resource's dynamic config on that broker, which alone can read the files).

A change to `listener.name.<listener>.ssl.keystore.*` / `ssl.truststore.*` is for one broker: on
the cluster default resource ("") it is refused ("Cannot update these configs at default cluster
level, broker id must be specified"), and on another broker's resource too ("Unexpected broker
id"; Kafka's admin client sends a broker resource to that broker). Stores that do not load, or a
certificate with another subject, are INVALID_REQUEST with the reason. Once the controller has
accepted a change, the stores are reloaded at once: a key set to the value it already has writes
no record, and still reloads files that changed, as in Kafka.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from gregor.broker.handlers import BrokerContext
from gregor.controller.operations import AlterConfigOp
from gregor.metadata.image import BROKER_RESOURCE
from gregor.metadata.listener_configs import listener_ssl_key
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import AlterConfigsRequest, IncrementalAlterConfigsRequest

ErrorAnswer = Callable[[Any, int, str], Any]
SCREENED = frozenset({AlterConfigsRequest.API_KEY, IncrementalAlterConfigsRequest.API_KEY})


def _after(context: BrokerContext, resource: Any, incremental: bool) -> dict[str, str]:
    """This broker's dynamic config as the resource's change would leave it."""
    if not incremental:
        return {entry.name: entry.value for entry in resource.configs if entry.value is not None}
    config = dict(context.metadata.image.broker_config(context.metadata.node_id))
    for entry in resource.configs:
        if entry.config_operation == AlterConfigOp.SET and entry.value is not None:
            config[entry.name] = entry.value
        elif entry.config_operation == AlterConfigOp.DELETE:
            config.pop(entry.name, None)
    return config


def _refusal(context: BrokerContext, resource: Any, incremental: bool) -> str | None:
    stores = sorted(entry.name for entry in resource.configs if listener_ssl_key(entry.name) is not None)
    if resource.resource_type != BROKER_RESOURCE or not stores:
        return None
    node = str(context.metadata.node_id)
    if resource.resource_name == "":
        return f"Cannot update these configs at default cluster level, broker id must be specified: {', '.join(stores)}"
    if resource.resource_name != node:
        return f"Unexpected broker id, expected {node} or empty string, but received {resource.resource_name}"
    if context.listener_tls is None:
        return f"this broker has no TLS listener for {', '.join(stores)}"
    refused = context.listener_tls.check(_after(context, resource, incremental))
    return None if refused is None else refused.message


def screen(context: BrokerContext, request: Any, error_answer: ErrorAnswer) -> tuple[Any | None, list[Any]]:
    """(what is left to forward, None for nothing; the answers of the refused resources)."""
    incremental = request.API_KEY == IncrementalAlterConfigsRequest.API_KEY
    kept, refused = copy.copy(request), []
    kept.resources = []
    for resource in request.resources:
        reason = _refusal(context, resource, incremental)
        if reason is None:
            kept.resources.append(resource)
            continue
        part = copy.copy(request)
        part.resources = [resource]
        refused.append(error_answer(part, ErrorCode.INVALID_REQUEST, reason))
    return (kept if kept.resources else None), refused


def reload_after(context: BrokerContext, request: Any, answer: Any) -> None:
    """Reload the stores a change accepted by the controller names (see the module docstring)."""
    if getattr(request, "validate_only", False) or context.listener_tls is None:
        return
    incremental = request.API_KEY == IncrementalAlterConfigsRequest.API_KEY
    accepted = {(item.resource_type, item.resource_name) for item in answer.responses if not item.error_code}
    for resource in request.resources:
        if ((resource.resource_type, resource.resource_name) in accepted
                and resource.resource_name == str(context.metadata.node_id)
                and any(listener_ssl_key(entry.name) for entry in resource.configs)):
            context.listener_tls.apply(_after(context, resource, incremental))
