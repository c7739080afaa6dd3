"""AlterClientQuotas (key 49), v0–v1: quota values set or removed per entity, committed by the
controller. Brokers check CLUSTER ALTER_CONFIGS before forwarding."""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.client_quota_control import QuotaAlteration, QuotaAlterationResult, QuotaOp
from gregor.metadata.client_quotas import quota_entity
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import AlterClientQuotasRequest, AlterClientQuotasResponse

API_KEY = 49


async def handle(context: QuorumContext, request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    quorum = context.quorum
    alterations = [QuotaAlteration(quota_entity((e.entity_type, e.entity_name) for e in entry.entity),
                                   [QuotaOp(op.key, op.value, op.remove) for op in entry.ops])
                   for entry in request.entries]
    try:
        results = await quorum.submit(
            lambda: quorum.controller.alter_client_quotas(alterations, request.validate_only))
    except KafkaError as error:
        results = [QuotaAlterationResult(a.entity, ErrorCode(error.code), str(error)) for a in alterations]
    entries = [AlterClientQuotasResponse.EntryData(
        error_code=result.error, error_message=result.message,
        entity=[AlterClientQuotasResponse.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                for e in entry.entity])
        for entry, result in zip(request.entries, results)]
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=entries)


def error_response(request: AlterClientQuotasRequest, code: int, message: str) -> AlterClientQuotasResponse:
    return AlterClientQuotasResponse(entries=[AlterClientQuotasResponse.EntryData(
        error_code=code, error_message=message,
        entity=[AlterClientQuotasResponse.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                for e in entry.entity]) for entry in request.entries])


HANDLERS = [Handler(API_KEY, 0, 1, handle)]
