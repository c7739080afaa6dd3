"""The `authorizedOperations` bit field of Metadata, DescribeCluster, DescribeGroups and
ConsumerGroupDescribe answers (KIP-430), as Kafka's AuthHelper computes it: for each operation
Kafka supports on the resource type, bit `1 << operation code` is set when the principal may
perform it (with the authorizer's implications: READ, WRITE, DELETE or ALTER imply DESCRIBE,
ALTER_CONFIGS implies DESCRIBE_CONFIGS). Without an authorizer every supported operation is set.
A field the client did not ask for keeps Kafka's "omitted" value."""

from __future__ import annotations

from typing import Callable

from gregor.broker.handlers import BrokerContext
from gregor.metadata.acls import CLUSTER_NAME, AclOperation, ResourceType

OMITTED = -2147483648

_O = AclOperation
#: Kafka's AclEntry.supportedOperations, per resource type.
SUPPORTED: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
}


def authorized_operations(context: BrokerContext, resource_type: ResourceType, name: str = CLUSTER_NAME) -> int:
    """The 32-bit field of the operations the request's principal may perform on the resource."""
    return operation_bits(lambda operation: context.allowed(operation, resource_type, name), resource_type)


def operation_bits(allowed: Callable[[AclOperation], bool], resource_type: ResourceType) -> int:
    """The field from an `allowed(operation)` check (a controller listener's authorizer, or a broker's)."""
    bits = 0
    for operation in SUPPORTED[resource_type]:
        if allowed(operation):
            bits |= 1 << operation
    return bits
