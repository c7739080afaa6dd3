"""The ACL authorizer over the metadata image's ACLs: Kafka's StandardAuthorizer semantics, sans-IO.

A request is allowed when the principal is a super user, or when an ALLOW entry matching the
principal (or `User:*`), the client host (or `*`) and the operation (or ALL, or an operation that
implies it) applies to the resource, and no DENY entry does (a DENY decides only its own operation
or ALL: DENY READ does not deny DESCRIBE). The entries that apply to a resource are the LITERAL ones
of its name, the LITERAL `*` wildcard and the PREFIXED ones its name starts with. A resource no
entry applies to at all (whatever the principal) is allowed only with
`allow.everyone.if.no.acl.found`.

The index is rebuilt only when the image's ACL mapping changes (a delta makes a new one only
when an ACL record was replayed), and decisions are remembered until it does: a request's checks
cost a dictionary lookup each, not a scan of the prefixed ACLs.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping

from gregor.metadata.acls import (
    WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AclOperation, AclPermissionType, PatternType,
    ResourceType, StandardAcl,
)

#: The `authorizer.class.name` that turns this authorizer on (Kafka's KRaft authorizer).
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True, slots=True)
class Requestor:
    """Who asks: Kafka's principal string ("User:alice") and the client's address."""

    principal: str
    host: str


_MAX_DECISIONS = 100_000  # decisions remembered between ACL changes


class _AclIndex:
    """The ACLs of one image, by resource type: literal ones by name, prefixed ones in a list."""

    def __init__(self, acls: Iterable[StandardAcl]) -> None:
        self.literal: dict[tuple[ResourceType, str], list[StandardAcl]] = defaultdict(list)
        self.prefixed: dict[ResourceType, list[StandardAcl]] = defaultdict(list)
        self.by_type: dict[ResourceType, list[StandardAcl]] = defaultdict(list)
        for acl in acls:
            self.by_type[acl.resource_type].append(acl)
            if acl.pattern_type == PatternType.PREFIXED:
                self.prefixed[acl.resource_type].append(acl)
            else:
                self.literal[(acl.resource_type, acl.resource_name)].append(acl)

    def applying_to(self, resource_type: ResourceType, name: str) -> list[StandardAcl]:
        found = list(self.literal.get((resource_type, name), ()))
        if name != WILDCARD_RESOURCE:
            found.extend(self.literal.get((resource_type, WILDCARD_RESOURCE), ()))
        found.extend(acl for acl in self.prefixed.get(resource_type, ()) if name.startswith(acl.resource_name))
        return found


def _matches_requestor(acl: StandardAcl, who: Requestor) -> bool:
    return acl.principal in (who.principal, WILDCARD_PRINCIPAL) and acl.host in (who.host, WILDCARD_HOST)


class StandardAuthorizer:
    """Decides with `super.users` and `allow.everyone.if.no.acl.found` over an image's ACLs."""

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._source: Mapping[uuid.UUID, StandardAcl] | None = None
        self._index = _AclIndex(())
        self._decisions: dict[tuple[Requestor, AclOperation, ResourceType, str], bool] = {}

    def _indexed(self, acls: Mapping[uuid.UUID, StandardAcl]) -> _AclIndex:
        if acls is not self._source:
            self._index = _AclIndex(acls.values())
            self._decisions.clear()
            self._source = acls
        return self._index

    def authorize(self, acls: Mapping[uuid.UUID, StandardAcl], who: Requestor, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """May `who` perform `operation` on the resource?"""
        index = self._indexed(acls)
        key = (who, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            if len(self._decisions) >= _MAX_DECISIONS:
                self._decisions.clear()
            decision = self._decisions[key] = self._decide(index, who, operation, resource_type, name)
        return decision

    def _decide(self, index: _AclIndex, who: Requestor, operation: AclOperation, resource_type: ResourceType,
                name: str) -> bool:
        if who.principal in self.super_users:
            return True
        applying = index.applying_to(resource_type, name)
        if not applying:
            return self.allow_everyone_if_no_acl_found
        allowed = False
        for acl in applying:
            if not _matches_requestor(acl, who) or not acl.allows_or_denies(operation):
                continue
            if acl.permission == AclPermissionType.DENY:
                return False
            allowed = True
        return allowed

    def authorize_by_resource_type(self, acls: Mapping[uuid.UUID, StandardAcl], who: Requestor,
                                   operation: AclOperation, resource_type: ResourceType) -> bool:
        """May `who` perform `operation` on at least one resource of the type (Kafka's
        `authorizeByResourceType`, KIP-679: idempotent producers without IDEMPOTENT_WRITE)? An
        ALLOW counts unless a DENY of the same operation covers all it names."""
        if who.principal in self.super_users:
            return True
        entries = [acl for acl in self._indexed(acls).by_type.get(resource_type, ())
                   if _matches_requestor(acl, who) and acl.allows_or_denies(operation)]
        if not self._indexed(acls).by_type.get(resource_type):
            return self.allow_everyone_if_no_acl_found
        denies = [acl for acl in entries if acl.permission == AclPermissionType.DENY]
        if any(d.pattern_type == PatternType.LITERAL and d.resource_name == WILDCARD_RESOURCE for d in denies):
            return False
        for allow in entries:
            if allow.permission != AclPermissionType.ALLOW:
                continue
            if not any(_covers(deny, allow) for deny in denies):
                return True
        return False


def _covers(deny: StandardAcl, allow: StandardAcl) -> bool:
    """The DENY applies to every resource the ALLOW names."""
    if deny.pattern_type == PatternType.PREFIXED:
        return allow.resource_name.startswith(deny.resource_name)
    return allow.pattern_type == PatternType.LITERAL and allow.resource_name == deny.resource_name
