"""The controller listener serves brokers and controllers only: with an authorizer, a principal
needs CLUSTER_ACTION on the cluster (or to be a super user); the broker of the same process is
trusted; ApiVersions is open to all."""

from __future__ import annotations

import uuid
from types import MappingProxyType

import pytest

from gregor.broker.authorization import IN_PROCESS_BROKER, BrokerAuthorizer
from gregor.broker.handlers import QuorumContext, quorum_handlers
from gregor.broker.network import CloseConnection, ConnectionInfo
from gregor.metadata.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from gregor.metadata.authorizer import StandardAuthorizer
from gregor.metadata.image import MetadataImage
from gregor.protocol.messages import ApiVersionsRequest, RequestHeader
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest

BROKERS_HOST = "10.0.0.5"
QUORUM_QUESTION = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
    topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])


class Quorum:
    def __init__(self) -> None:
        acl = StandardAcl(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:ANONYMOUS", BROKERS_HOST,
                          AclOperation.CLUSTER_ACTION, AclPermissionType.ALLOW)
        self.image = MetadataImage(acls=MappingProxyType({uuid.UUID(int=1): acl}))
        self.authorizer = BrokerAuthorizer(StandardAuthorizer(["User:ops"]), self)
        self.asked: list[object] = []

    def describe_quorum(self, request: object) -> str:
        self.asked.append(request)
        return "answered"


def ask(quorum: Quorum, principal: str, host: str, api_key: int, request: object) -> object:
    context = QuorumContext(quorum, RequestHeader(request_api_key=api_key, request_api_version=0),  # type: ignore[arg-type]
                            ConnectionInfo(f"{host}:5000", "CONTROLLER", 1, principal), {}, 0)
    return quorum_handlers()[api_key].handle(context, request)


@pytest.mark.parametrize("principal, host", [("User:ANONYMOUS", BROKERS_HOST), ("User:ops", "10.9.9.9"),
                                             (IN_PROCESS_BROKER, "in-process")])
def test_brokers_super_users_and_the_in_process_broker_are_served(principal, host):
    quorum = Quorum()
    assert ask(quorum, principal, host, 55, QUORUM_QUESTION) == "answered"


def test_anyone_else_is_disconnected_but_may_learn_the_api_versions():
    quorum = Quorum()
    with pytest.raises(CloseConnection, match="CLUSTER_ACTION"):
        ask(quorum, "User:ANONYMOUS", "10.9.9.9", 55, QUORUM_QUESTION)
    assert quorum.asked == []
    assert ask(quorum, "User:ANONYMOUS", "10.9.9.9", 18, ApiVersionsRequest()) is not None
