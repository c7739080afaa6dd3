"""CreateAcls and DeleteAcls on the controller (Kafka's AclControlManager): each becomes
AccessControlEntryRecords / RemoveAccessControlEntryRecords, committed before the answer.

An ACL that exists already is not created twice (its creation succeeds, as in Kafka). An ACL
matched by several delete filters of one request is removed once and reported by the first.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Sequence

from gregor.controller.operations import ControllerResult
from gregor.metadata.acls import AclFilter, StandardAcl, validate_acl
from gregor.metadata.image import MetadataImage
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import AccessControlEntryRecord, RemoveAccessControlEntryRecord


@dataclass(frozen=True)
class AclCreationResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class AclDeletionResult:
    """One filter's outcome: its error, or the ACLs it removed."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    deleted: tuple[StandardAcl, ...] = field(default_factory=tuple)


def create_acls(image: MetadataImage, acls: Sequence[StandardAcl],
                rng: random.Random) -> ControllerResult[list[AclCreationResult]]:
    existing = set(image.acls.values())
    results: list[AclCreationResult] = []
    records: list[Any] = []
    for acl in acls:
        reason = validate_acl(acl)
        if reason is not None:
            results.append(AclCreationResult(ErrorCode.INVALID_REQUEST, reason))
            continue
        results.append(AclCreationResult())
        if acl in existing:
            continue
        existing.add(acl)
        acl_id = uuid.UUID(int=rng.getrandbits(128))
        while acl_id in image.acls:
            acl_id = uuid.UUID(int=rng.getrandbits(128))
        records.append(AccessControlEntryRecord(
            id=acl_id, resource_type=acl.resource_type, resource_name=acl.resource_name,
            pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host, operation=acl.operation,
            permission_type=acl.permission))
    return ControllerResult(results, tuple(records))


def delete_acls(image: MetadataImage, filters: Sequence[AclFilter]) -> ControllerResult[list[AclDeletionResult]]:
    removed: set[uuid.UUID] = set()
    results: list[AclDeletionResult] = []
    records: list[Any] = []
    for acl_filter in filters:
        reason = acl_filter.unknown_element()
        if reason is not None:
            results.append(AclDeletionResult(ErrorCode.INVALID_REQUEST, reason))
            continue
        matched = [(acl_id, acl) for acl_id, acl in sorted(image.acls.items())
                   if acl_id not in removed and acl_filter.matches(acl)]
        removed.update(acl_id for acl_id, _ in matched)
        records.extend(RemoveAccessControlEntryRecord(id=acl_id) for acl_id, _ in matched)
        results.append(AclDeletionResult(deleted=tuple(acl for _, acl in matched)))
    return ControllerResult(results, tuple(records))
