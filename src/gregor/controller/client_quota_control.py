"""AlterClientQuotas on the controller (Kafka's ClientQuotaControlManager): each entry's set and
removed keys become ClientQuotaRecords, after the entity and every value are validated (an entry
with one bad op changes nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from gregor.controller.operations import ControllerResult
from gregor.metadata.client_quotas import QuotaEntity, validate_quota_entity, validate_quota_value
from gregor.metadata.image import MetadataImage
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ClientQuotaRecord


@dataclass(frozen=True)
class QuotaOp:
    key: str
    value: float
    remove: bool


@dataclass(frozen=True)
class QuotaAlteration:
    entity: QuotaEntity
    ops: Sequence[QuotaOp]


@dataclass(frozen=True)
class QuotaAlterationResult:
    entity: QuotaEntity
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


def _entry_error(alteration: QuotaAlteration) -> str | None:
    reason = validate_quota_entity(alteration.entity)
    if reason is not None:
        return reason
    keys = [op.key for op in alteration.ops]
    if len(set(keys)) != len(keys):
        return "Duplicate quota key in the request"
    for op in alteration.ops:
        if not op.remove:
            reason = validate_quota_value(alteration.entity, op.key, op.value)
            if reason is not None:
                return reason
    return None


def alter_client_quotas(image: MetadataImage, alterations: Sequence[QuotaAlteration],
                        validate_only: bool = False) -> ControllerResult[list[QuotaAlterationResult]]:
    results: list[QuotaAlterationResult] = []
    records: list[Any] = []
    for alteration in alterations:
        reason = _entry_error(alteration)
        if reason is not None:
            results.append(QuotaAlterationResult(alteration.entity, ErrorCode.INVALID_REQUEST, reason))
            continue
        results.append(QuotaAlterationResult(alteration.entity))
        current = image.client_quotas.get(alteration.entity, {})
        components = [ClientQuotaRecord.EntityData(entity_type=kind, entity_name=name)
                      for kind, name in alteration.entity]
        for op in alteration.ops:
            if op.remove and op.key not in current:
                continue
            records.append(ClientQuotaRecord(entity=components, key=op.key,
                                             value=0.0 if op.remove else op.value, remove=op.remove))
    return ControllerResult(results, () if validate_only else tuple(records))
