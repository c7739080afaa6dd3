"""An operator's requests on a controller listener (KIP-919): DescribeCluster lists the
controllers (ALTER on the cluster required, as Kafka's ControllerApis), DescribeConfigs describes
the controller's own broker resource (DESCRIBE_CONFIGS on the cluster), config changes need
ALTER_CONFIGS per resource, and none needs the CLUSTER_ACTION the quorum's own APIs require. A
client listener refuses a request for controllers with Kafka's MISMATCHED_ENDPOINT_TYPE."""

from __future__ import annotations

import asyncio
import uuid
from types import MappingProxyType

import pytest

from gregor.broker.authorization import BrokerAuthorizer
from gregor.broker.config import BrokerConfig
from gregor.broker.handlers import QuorumContext, quorum_handlers
from gregor.broker.handlers.describe_cluster import BROKERS, endpoint_refusal
from gregor.broker.network import ConnectionInfo
from gregor.metadata.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from gregor.metadata.authorizer import StandardAuthorizer
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from gregor.metadata.topic_configs import ConfigSource
from gregor.protocol.error_codes import ErrorCode
from gregor.controller.operations import AlterConfigsResult
from gregor.protocol.messages import (
    DescribeClusterRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest, RequestHeader,
)

OPERATOR = "User:ops"


class Quorum:
    """Controller 2 of three; the operator holds the operations given (with an authorizer)."""

    def __init__(self, operations: tuple[AclOperation, ...] | None = None, leader_id: int | None = 3) -> None:
        self.node_id = 2
        self.leader_id = leader_id
        self.config = BrokerConfig({
            "process.roles": "controller", "node.id": "2", "listeners": "CONTROLLER://127.0.0.1:9095",
            "controller.quorum.voters": "1@h1:9093,2@h2:9095,3@h3:9097", "num.io.threads": "3"})
        acls = {uuid.UUID(int=index): StandardAcl(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, OPERATOR,
                                                  "*", operation, AclPermissionType.ALLOW)
                for index, operation in enumerate(operations or ())}
        self.image = MetadataImage(cluster_id="c1", acls=MappingProxyType(acls), configs=MappingProxyType(
            {(BROKER_RESOURCE, "2"): {"log.retention.ms": "5000"}, (BROKER_RESOURCE, ""): {"log.cleaner.threads": "2"}}))
        self.authorizer = BrokerAuthorizer(StandardAuthorizer() if operations is not None else None, self)


def ask(quorum: Quorum, api_key: int, version: int, request: object):
    context = QuorumContext(quorum, RequestHeader(request_api_key=api_key, request_api_version=version),  # type: ignore[arg-type]
                            ConnectionInfo("10.0.0.9:5000", "CONTROLLER", 1, OPERATOR), {}, 0)
    return quorum_handlers()[api_key].handle(context, request)


def test_describe_cluster_lists_the_voters_and_the_leader():
    answer = ask(Quorum(), 60, 1, DescribeClusterRequest(endpoint_type=2))
    assert (answer.error_code, answer.endpoint_type, answer.cluster_id, answer.controller_id) == (0, 2, "c1", 3)
    assert [(b.broker_id, b.host, b.port) for b in answer.brokers] == [(1, "h1", 9093), (2, "h2", 9095), (3, "h3", 9097)]
    assert ask(Quorum(leader_id=None), 60, 1, DescribeClusterRequest(endpoint_type=2)).controller_id == -1


@pytest.mark.parametrize("version, endpoint_type, code, message", [
    (1, 1, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
     "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"),
    (0, 1, ErrorCode.INVALID_REQUEST,
     "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"),
    (1, 7, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 7"),
])
def test_describe_cluster_for_other_endpoints_is_refused_as_kafka_refuses_it(version, endpoint_type, code, message):
    answer = ask(Quorum(), 60, version, DescribeClusterRequest(endpoint_type=endpoint_type))
    assert (answer.error_code, answer.error_message, answer.brokers) == (code, message, [])


def test_a_client_listener_refuses_a_request_for_controllers():
    refusal = endpoint_refusal(1, DescribeClusterRequest(endpoint_type=2), BROKERS)
    assert refusal is not None and refusal.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    assert refusal.error_message == ("The request was sent to an endpoint of type BROKER, but we wanted an endpoint "
                                     "of type CONTROLLER")
    assert endpoint_refusal(1, DescribeClusterRequest(endpoint_type=1), BROKERS) is None


def test_describe_cluster_needs_alter_on_the_cluster_not_cluster_action():
    refused = ask(Quorum(operations=(AclOperation.DESCRIBE,)), 60, 1, DescribeClusterRequest(endpoint_type=2))
    assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and refused.brokers == []
    answered = ask(Quorum(operations=(AclOperation.ALTER,)), 60, 1,
                   DescribeClusterRequest(endpoint_type=2, include_cluster_authorized_operations=True))
    assert answered.error_code == ErrorCode.NONE and len(answered.brokers) == 3
    assert answered.cluster_authorized_operations == (1 << AclOperation.ALTER) | (1 << AclOperation.DESCRIBE)


def _describe(quorum: Quorum, resource_type: int, name: str, keys: list[str] | None = None):
    request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=keys)], include_synonyms=True)
    return ask(quorum, 32, 4, request).results[0]


def test_describe_configs_gives_the_controllers_own_layers():
    result = _describe(Quorum(), BROKER_RESOURCE, "2")
    assert result.error_code == ErrorCode.NONE
    entries = {entry.name: (entry.value, entry.config_source) for entry in result.configs}
    assert entries["log.retention.ms"] == ("5000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert entries["log.cleaner.threads"] == ("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert entries["num.io.threads"] == ("3", ConfigSource.STATIC_BROKER_CONFIG)
    assert entries["num.network.threads"] == ("3", ConfigSource.DEFAULT_CONFIG)
    default = _describe(Quorum(), BROKER_RESOURCE, "")
    assert [(e.name, e.value) for e in default.configs] == [("log.cleaner.threads", "2")]
    assert [e.name for e in _describe(Quorum(), BROKER_RESOURCE, "2", ["num.io.threads"]).configs] == ["num.io.threads"]


def test_describe_configs_refuses_other_nodes_other_resources_and_the_unauthorized():
    other = _describe(Quorum(), BROKER_RESOURCE, "3")
    assert other.error_code == ErrorCode.INVALID_REQUEST
    assert other.error_message == "Unexpected broker id, expected 2 or empty string, but received 3"
    topic = _describe(Quorum(), TOPIC_RESOURCE, "orders")
    assert topic.error_code == ErrorCode.INVALID_REQUEST and "--bootstrap-server" in topic.error_message
    refused = _describe(Quorum(operations=(AclOperation.DESCRIBE,)), BROKER_RESOURCE, "2")
    assert (refused.error_code, refused.configs) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    assert _describe(Quorum(operations=(AclOperation.DESCRIBE_CONFIGS,)), BROKER_RESOURCE, "2").error_code == 0


class Committing(Quorum):
    """A quorum whose controller accepts every config change (what the handler asks it)."""

    def __init__(self, operations: tuple[AclOperation, ...] | None) -> None:
        super().__init__(operations)
        self.listener_tls = None
        self.controller = self

    def incremental_alter_configs(self, resources, validate_only):
        return [AlterConfigsResult(r.resource_type, r.resource_name, ErrorCode.NONE, None) for r in resources]

    async def submit(self, operation):
        return operation()


def _alter(quorum: Quorum, *resources: tuple[int, str]):
    request = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=kind, resource_name=name, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
            name="retention.ms" if kind == TOPIC_RESOURCE else "log.retention.ms", config_operation=0, value="1")])
        for kind, name in resources])
    answer = asyncio.run(ask(quorum, 44, 1, request))
    return {(item.resource_type, item.resource_name): item.error_code for item in answer.responses}


def test_an_operator_changes_configs_with_alter_configs_not_cluster_action():
    """Kafka's ControllerApis: ALTER_CONFIGS on the cluster for broker resources, on the topic for
    a topic's; a refused resource is answered beside the others (no closed connection)."""
    resources = ((BROKER_RESOURCE, "2"), (TOPIC_RESOURCE, "orders"))
    assert _alter(Committing((AclOperation.ALTER_CONFIGS,)), *resources) == {
        (BROKER_RESOURCE, "2"): ErrorCode.NONE, (TOPIC_RESOURCE, "orders"): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert _alter(Committing((AclOperation.DESCRIBE,)), (BROKER_RESOURCE, "2")) == {
        (BROKER_RESOURCE, "2"): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    assert set(_alter(Committing((AclOperation.CLUSTER_ACTION,)), *resources).values()) == {ErrorCode.NONE}
    assert set(_alter(Committing(None), *resources).values()) == {ErrorCode.NONE}  # no authorizer
