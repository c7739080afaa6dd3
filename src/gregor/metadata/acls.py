"""ACLs as the metadata log holds them (AccessControlEntryRecord), with Kafka's enumerations and
the filter semantics of DescribeAcls / DeleteAcls (Kafka's `AclBindingFilter.matches`).

The enumerations are Kafka's wire codes (`gregor.protocol.acl_codes`, re-exported here), so
records written by Kafka and by Gregor read the same.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from typing import TypeVar

from gregor.protocol.acl_codes import (  # re-exported: the names callers import from here
    AclOperation as AclOperation, AclPermissionType as AclPermissionType, PatternType as PatternType,
    ResourceType as ResourceType,
)

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


#: An ALLOW of the key operation also allows these (Kafka's AclEntry implied operations).
IMPLIED_BY_ALLOW: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.READ: frozenset({AclOperation.DESCRIBE}),
    AclOperation.WRITE: frozenset({AclOperation.DESCRIBE}),
    AclOperation.DELETE: frozenset({AclOperation.DESCRIBE}),
    AclOperation.ALTER: frozenset({AclOperation.DESCRIBE}),
    AclOperation.ALTER_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS}),
}


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """One access control entry bound to a resource pattern (Kafka's StandardAcl)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def allows_or_denies(self, operation: AclOperation) -> bool:
        """This entry decides `operation`: the same one, ALL, or (ALLOW only) one implying it."""
        if self.operation in (operation, AclOperation.ALL):
            return True
        return (self.permission == AclPermissionType.ALLOW
                and operation in IMPLIED_BY_ALLOW.get(self.operation, frozenset()))


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A DescribeAcls / DeleteAcls filter; None strings match anything, as do the ANY codes.

    `pattern_type` MATCH matches the ACLs that would apply to the literal resource named
    (literal ones of that name, the `*` wildcard, prefixed ones the name starts with)."""

    resource_type: int = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: int = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: int = AclOperation.ANY
    permission: int = AclPermissionType.ANY

    def matches(self, acl: StandardAcl) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission == AclPermissionType.ANY or self.permission == acl.permission

    def _pattern_matches(self, acl: StandardAcl) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type == PatternType.LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD_RESOURCE)
            return acl.pattern_type == PatternType.PREFIXED and self.resource_name.startswith(acl.resource_name)
        if self.pattern_type != PatternType.ANY and self.pattern_type != acl.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name

    def unknown_element(self) -> str | None:
        """Why the filter cannot match anything (an UNKNOWN code), None when it can."""
        for name, value, enum_type in (("resource type", self.resource_type, ResourceType),
                                       ("pattern type", self.pattern_type, PatternType),
                                       ("operation", self.operation, AclOperation),
                                       ("permission type", self.permission, AclPermissionType)):
            if value not in enum_type._value2member_map_ or value == 0:
                return f"Unknown {name} {value} in the filter."
        return None


def validate_acl(acl: StandardAcl) -> str | None:
    """Why an ACL cannot be created (Kafka's AclControlManager.validateNewAcl), None when it can."""
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resource type {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid pattern type {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permission type {acl.permission.name}"
    if not acl.resource_name:
        return "Resource name should not be empty"
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    kind, _, name = acl.principal.partition(":")
    if not kind or not name:
        return f"Could not parse principal from `{acl.principal}` (no colon is present separating the " \
               f"principal type from the principal name)"
    if not acl.host:
        return "Host should not be empty"
    return None


def acl_from_codes(resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str,
                   operation: int, permission: int) -> StandardAcl:
    """An ACL from wire codes; a code Kafka does not define becomes that enum's UNKNOWN."""
    return StandardAcl(_enum(ResourceType, resource_type), resource_name, _enum(PatternType, pattern_type),
                       principal, host, _enum(AclOperation, operation), _enum(AclPermissionType, permission))


EnumT = TypeVar("EnumT", bound=enum.IntEnum)


def _enum(enum_type: type[EnumT], code: int) -> EnumT:
    try:
        return enum_type(code)
    except ValueError:
        return enum_type(0)


def new_acl_id(rng_bits: int) -> uuid.UUID:
    """An ACL id from 128 random bits (the controller's seeded random source)."""
    return uuid.UUID(int=rng_bits)
