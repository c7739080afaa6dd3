"""ACL bindings and client quota entities, as the admin client takes and returns them.

The codes are Kafka's wire codes (its `ResourceType`, `PatternType`, `AclOperation`,
`AclPermissionType`); names follow confluent-kafka's admin API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from gregor.protocol.acl_codes import (  # re-exported: the names callers import from here
    AclOperation as AclOperation, AclPermissionType as AclPermissionType, PatternType as PatternType,
    ResourceType as ResourceType,
)


#: confluent-kafka's names for Kafka's resource and pattern types.
AclResourceType = ResourceType
AclPatternType = PatternType


@dataclass(frozen=True)
class AclBinding:
    """One ACL: who (principal, host) may or may not do what (operation) to which resources."""

    resource_type: AclResourceType
    name: str
    pattern_type: AclPatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True)
class AclBindingFilter:
    """ACLs to describe or delete: None matches any string, the ANY codes any value; MATCH
    matches the ACLs that apply to the named resource (literal, wildcard and prefixed)."""

    resource_type: AclResourceType = AclResourceType.ANY
    name: str | None = None
    pattern_type: AclPatternType = AclPatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY


#: A client quota entity: entity type ("user", "client-id", "ip") to name, None for the default.
QuotaEntity = Mapping[str, "str | None"]


@dataclass(frozen=True)
class QuotaAlteration:
    """Quota values to set on an entity (`None` removes the key)."""

    entity: QuotaEntity
    values: Mapping[str, float | None]
