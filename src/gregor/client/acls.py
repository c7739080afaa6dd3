"""ACL bindings and client quota entities, as the admin client takes and returns them.

The codes are Kafka's wire codes (its `ResourceType`, `PatternType`, `AclOperation`,
`AclPermissionType`); names follow confluent-kafka's admin API.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping


class AclResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclPatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


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
