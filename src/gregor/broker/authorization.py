"""The broker's ACL checks as handlers make them: the configured authorizer over the committed
metadata image's ACLs, for the principal and address of the request's connection.

With no `authorizer.class.name` every check passes (Kafka without an authorizer). The
inter-broker principal: until authentication lands every connection is `User:ANONYMOUS`, so the
broker traffic Kafka authorizes with CLUSTER_ACTION (follower fetches, OffsetForLeaderEpoch from
followers, every request on the controller listener) passes only for a principal that is in
`super.users` or holds CLUSTER_ACTION on the cluster (an ACL that may name the brokers' hosts).
The broker of the embedded single node reaches its controller in process, as `IN_PROCESS_BROKER`,
a principal type no authenticator produces.
"""

from __future__ import annotations

from typing import Iterable, Protocol

from gregor.broker.config import BrokerConfig
from gregor.broker.network import ConnectionInfo
from gregor.metadata.acls import CLUSTER_NAME, AclOperation, ResourceType
from gregor.metadata.authorizer import Requestor, StandardAuthorizer
from gregor.metadata.image import MetadataImage

#: The principal of the broker's in-process connection to the controller of its own process.
IN_PROCESS_BROKER = "Broker:in-process"


class ImageSource(Protocol):
    @property
    def image(self) -> MetadataImage: ...


def client_host(connection: ConnectionInfo) -> str:
    """The peer's address without its port (what ACL hosts are compared with)."""
    host = connection.peer.rsplit(":", 1)[0] if ":" in connection.peer else connection.peer
    return host.strip("[]")


def configured_authorizer(config: BrokerConfig, images: ImageSource) -> BrokerAuthorizer:
    """The authorizer `authorizer.class.name` asks for (the config refused any other at start)."""
    if not config.get("authorizer.class.name"):
        return BrokerAuthorizer(None, images)
    return BrokerAuthorizer(StandardAuthorizer(config.super_users, config.get("allow.everyone.if.no.acl.found")),
                            images)


class BrokerAuthorizer:
    """`authorizer=None`: authorization is off and everything is allowed."""

    def __init__(self, authorizer: StandardAuthorizer | None, images: ImageSource | None) -> None:
        self.authorizer = authorizer
        self._images = images

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allowed(self, connection: ConnectionInfo, operation: AclOperation, resource_type: ResourceType,
                name: str = CLUSTER_NAME) -> bool:
        if self.authorizer is None or self._images is None:
            return True
        if connection.principal == IN_PROCESS_BROKER:
            return True
        return self.authorizer.authorize(self._images.image.acls, _requestor(connection), operation,
                                         resource_type, name)

    def allowed_names(self, connection: ConnectionInfo, operation: AclOperation, resource_type: ResourceType,
                      names: Iterable[str]) -> set[str]:
        """The names among `names` the connection may perform `operation` on."""
        return {name for name in names if self.allowed(connection, operation, resource_type, name)}

    def allowed_by_type(self, connection: ConnectionInfo, operation: AclOperation,
                        resource_type: ResourceType) -> bool:
        if self.authorizer is None or self._images is None or connection.principal == IN_PROCESS_BROKER:
            return True
        return self.authorizer.authorize_by_resource_type(self._images.image.acls, _requestor(connection),
                                                          operation, resource_type)


def _requestor(connection: ConnectionInfo) -> Requestor:
    return Requestor(connection.principal, client_host(connection))


#: Authorization off: what a context gets when it is built without the broker's authorizer.
OPEN = BrokerAuthorizer(None, None)
