"""The ACL checks of the requests a broker forwards to the controller, made on the broker.

Kafka wraps a forwarded request in an Envelope so that the controller authorizes the client's
principal; Gregor authorizes on the broker that took the request (it has the committed ACLs and
the connection's principal), then forwards only what passed, and the controller requires
CLUSTER_ACTION of the broker itself. Per-item APIs (topics, config resources) answer each refused
item with Kafka's error (TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED) beside the
controller's answers for the rest; cluster-level APIs are refused whole. The ACL APIs answer
SECURITY_DISABLED when no authorizer is configured, as Kafka does.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from gregor.broker.handlers import BrokerContext
from gregor.metadata.acls import CLUSTER_NAME, AclOperation, ResourceType
from gregor.metadata.group_configs import GROUP_RESOURCE
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    AlterClientQuotasRequest, AlterConfigsRequest, AlterUserScramCredentialsRequest, CreateAclsRequest,
    CreatePartitionsRequest, CreateTopicsRequest, DeleteAclsRequest, DeleteTopicsRequest, ElectLeadersRequest,
    IncrementalAlterConfigsRequest, UpdateFeaturesRequest,
)
from gregor.protocol.messages.alter_partition_reassignments import AlterPartitionReassignmentsRequest
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest
from gregor.protocol.messages.list_partition_reassignments import ListPartitionReassignmentsRequest

BROKER_LOGGER_RESOURCE = 8
MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
}

ItemCheck = Callable[[BrokerContext, Any], "ErrorCode | None"]


def _topic(operation: AclOperation, name_of: Callable[[BrokerContext, Any], str | None]) -> ItemCheck:
    def check(context: BrokerContext, item: Any) -> ErrorCode | None:
        name = name_of(context, item)
        if name is None or context.allowed(operation, ResourceType.TOPIC, name):
            return None  # an unknown topic id: the controller answers UNKNOWN_TOPIC_ID
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return check


def _create_topic(context: BrokerContext, topic: Any) -> ErrorCode | None:
    if context.allowed(AclOperation.CREATE) or context.allowed(AclOperation.CREATE, ResourceType.TOPIC, topic.name):
        return None
    return ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _alter_config(context: BrokerContext, resource: Any) -> ErrorCode | None:
    return alter_config_refusal(context.allowed, resource)


def alter_config_refusal(allowed: Callable[[AclOperation, ResourceType, str], bool], resource: Any) -> ErrorCode | None:
    """ALTER_CONFIGS on the topic or group, or on the cluster for broker resources (Kafka's checks),
    with `allowed(operation, resource type, name)` of a broker's or a controller's authorizer."""
    if resource.resource_type == TOPIC_RESOURCE:
        permitted = allowed(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, resource.resource_name)
        return None if permitted else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource.resource_type in (BROKER_RESOURCE, BROKER_LOGGER_RESOURCE):
        permitted = allowed(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
        return None if permitted else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if resource.resource_type == GROUP_RESOURCE:
        permitted = allowed(AclOperation.ALTER_CONFIGS, ResourceType.GROUP, resource.resource_name)
        return None if permitted else ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None


def _deleted_name(context: BrokerContext, topic: Any) -> str | None:
    return topic.name if topic.name is not None else context.metadata.topic_name(topic.topic_id)


@dataclass(frozen=True)
class _Items:
    """Where a request lists its items, how each is checked, and where its answer lists them."""

    request_lists: tuple[tuple[str, ItemCheck], ...]
    response_list: str


ITEM_CHECKS: dict[int, _Items] = {
    CreateTopicsRequest.API_KEY: _Items((("topics", _create_topic),), "topics"),
    DeleteTopicsRequest.API_KEY: _Items((("topic_names", _topic(AclOperation.DELETE, lambda _c, name: name)),
                                         ("topics", _topic(AclOperation.DELETE, _deleted_name))), "responses"),
    CreatePartitionsRequest.API_KEY: _Items((("topics", _topic(AclOperation.ALTER, lambda _c, t: t.name)),),
                                            "results"),
    AlterConfigsRequest.API_KEY: _Items((("resources", _alter_config),), "responses"),
    IncrementalAlterConfigsRequest.API_KEY: _Items((("resources", _alter_config),), "responses"),
}

CLUSTER_CHECKS: dict[int, AclOperation] = {
    ElectLeadersRequest.API_KEY: AclOperation.ALTER,
    AlterPartitionReassignmentsRequest.API_KEY: AclOperation.ALTER,
    ListPartitionReassignmentsRequest.API_KEY: AclOperation.DESCRIBE,
    DescribeQuorumRequest.API_KEY: AclOperation.DESCRIBE,
    CreateAclsRequest.API_KEY: AclOperation.ALTER,
    DeleteAclsRequest.API_KEY: AclOperation.ALTER,
    AlterClientQuotasRequest.API_KEY: AclOperation.ALTER_CONFIGS,
    AlterUserScramCredentialsRequest.API_KEY: AclOperation.ALTER,
    UpdateFeaturesRequest.API_KEY: AclOperation.ALTER,
}
NEEDS_AUTHORIZER = frozenset({CreateAclsRequest.API_KEY, DeleteAclsRequest.API_KEY})


@dataclass
class Screened:
    """What is left to forward (None: nothing) and the answers of what was refused, whose items
    (in `response_list`) join the controller's answer."""

    request: Any | None
    refused: list[Any]
    response_list: str = ""

    def merged(self, answer: Any) -> Any:
        """`answer` with the refused items' answers added."""
        for part in self.refused:
            getattr(answer, self.response_list).extend(getattr(part, self.response_list))
        return answer


def screen(context: BrokerContext, request: Any,
           error_answer: Callable[[Any, int, str], Any]) -> Screened:
    api_key = request.API_KEY
    if api_key in NEEDS_AUTHORIZER and not context.authorizer.enabled:
        return Screened(None, [error_answer(request, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")])
    operation = CLUSTER_CHECKS.get(api_key)
    if operation is not None:
        if context.allowed(operation):
            return Screened(request, [])
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return Screened(None, [error_answer(request, code, MESSAGES[code])])
    items = ITEM_CHECKS.get(api_key)
    if items is None or not context.authorizer.enabled:
        return Screened(request, [])
    kept = copy.copy(request)
    refused_by_code: dict[ErrorCode, Any] = {}
    any_kept = False
    for attribute, check in items.request_lists:
        values = getattr(request, attribute) or []
        allowed: list[Any] = []
        for item in values:
            refusal = check(context, item)
            if refusal is None:
                allowed.append(item)
                continue
            refused = refused_by_code.get(refusal)
            if refused is None:
                refused = refused_by_code[refusal] = copy.copy(request)
                for name, _ in items.request_lists:
                    setattr(refused, name, [])
            getattr(refused, attribute).append(item)
        setattr(kept, attribute, allowed)
        any_kept = any_kept or bool(allowed)
    answers = [error_answer(part, code, MESSAGES[code]) for code, part in refused_by_code.items()]
    if not refused_by_code:
        return Screened(request, [])
    return Screened(kept if any_kept else None, answers, items.response_list)
