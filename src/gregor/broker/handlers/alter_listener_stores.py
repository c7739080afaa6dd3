"""A node's own check of listener key and trust store changes in AlterConfigs and
IncrementalAlterConfigs, before they are committed (Kafka's ConfigAdminManager validates a broker
resource's dynamic config on that broker, which alone can read the files).

A broker checks them before it forwards the request to the controller; a controller checks those
for its own node id that reach its controller listener (KIP-919: `--bootstrap-controller`).
A change to `listener.name.<listener>.ssl.keystore.*` / `ssl.truststore.*` is for one node: on
the cluster default resource ("") it is refused ("Cannot update these configs at default cluster
level, broker id must be specified"). On another node's resource a broker refuses it too
("Unexpected broker id"; Kafka's admin client sends a broker resource to that broker), while the
active controller commits it unchecked, as Kafka's controllers do, and that node loads the stores
when it applies the record (a failure is logged there, the old stores kept). Stores that do not
load, or a certificate with another subject, are INVALID_REQUEST with the reason. Once a change
is accepted, the stores are reloaded at once: a key set to the value it already has writes no
record, and still reloads files that changed, as in Kafka.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from gregor.broker.handlers import BrokerContext
from gregor.broker.security.listener_tls import ListenerTls
from gregor.controller.operations import AlterConfigOp
from gregor.metadata.image import BROKER_RESOURCE
from gregor.metadata.listener_configs import listener_ssl_key
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import AlterConfigsRequest, IncrementalAlterConfigsRequest

ErrorAnswer = Callable[[Any, int, str], Any]
SCREENED = frozenset({AlterConfigsRequest.API_KEY, IncrementalAlterConfigsRequest.API_KEY})


@dataclass(frozen=True)
class Node:
    """The node that checks: its id, its committed dynamic config, its stores, and whether a
    change for another node's resource passes unchecked (on a controller) or is refused (on a broker)."""

    node_id: int
    dynamic: Callable[[], Mapping[str, str]]
    listener_tls: ListenerTls | None
    others_pass: bool = False


def broker_node(context: BrokerContext) -> Node:
    """The broker a client listener's request reached, as the checker of its own stores."""
    metadata = context.metadata
    return Node(metadata.node_id, lambda: metadata.image.broker_config(metadata.node_id), context.listener_tls)


def _after(node: Node, resource: Any, incremental: bool) -> dict[str, str]:
    """This node's dynamic config as the resource's change would leave it."""
    if not incremental:
        return {entry.name: entry.value for entry in resource.configs if entry.value is not None}
    config = dict(node.dynamic())
    for entry in resource.configs:
        if entry.config_operation == AlterConfigOp.SET and entry.value is not None:
            config[entry.name] = entry.value
        elif entry.config_operation == AlterConfigOp.DELETE:
            config.pop(entry.name, None)
    return config


def refusal(node: Node, resource: Any, incremental: bool) -> str | None:
    """Why the resource's change of listener stores cannot be made (None: it can, or names none)."""
    stores = sorted(entry.name for entry in resource.configs if listener_ssl_key(entry.name) is not None)
    if resource.resource_type != BROKER_RESOURCE or not stores:
        return None
    own = str(node.node_id)
    if resource.resource_name == "":
        return f"Cannot update these configs at default cluster level, broker id must be specified: {', '.join(stores)}"
    if resource.resource_name != own:
        return None if node.others_pass else (f"Unexpected broker id, expected {own} or empty string, but received "
                                              f"{resource.resource_name}")
    if node.listener_tls is None:
        return f"this node has no TLS listener for {', '.join(stores)}"
    refused = node.listener_tls.check(_after(node, resource, incremental))
    return None if refused is None else refused.message


def screen(context: BrokerContext, request: Any, error_answer: ErrorAnswer) -> tuple[Any | None, list[Any]]:
    """A broker's check before forwarding: (what is left to forward, None for nothing; the answers
    of the refused resources)."""
    node = broker_node(context)
    incremental = request.API_KEY == IncrementalAlterConfigsRequest.API_KEY
    kept, refused = copy.copy(request), []
    kept.resources = []
    for resource in request.resources:
        reason = refusal(node, resource, incremental)
        if reason is None:
            kept.resources.append(resource)
            continue
        part = copy.copy(request)
        part.resources = [resource]
        refused.append(error_answer(part, ErrorCode.INVALID_REQUEST, reason))
    return (kept if kept.resources else None), refused


def reload_after(node: Node, request: Any, answer: Any) -> None:
    """Reload the stores a change accepted by the controller names (see the module docstring)."""
    if getattr(request, "validate_only", False) or node.listener_tls is None:
        return
    incremental = request.API_KEY == IncrementalAlterConfigsRequest.API_KEY
    accepted = {(item.resource_type, item.resource_name) for item in answer.responses if not item.error_code}
    for resource in request.resources:
        if ((resource.resource_type, resource.resource_name) in accepted
                and resource.resource_name == str(node.node_id)
                and any(listener_ssl_key(entry.name) for entry in resource.configs)):
            node.listener_tls.apply(_after(node, resource, incremental))
