"""DescribeClientQuotas (key 48), v0–v1: the committed quota values of the entities a filter
matches, from this broker's image (Kafka's ClientQuotaMetadataManager).

Each component matches by EXACT name (a null name: the default entity), DEFAULT, or SPECIFIED
(any named entity of that type). Non-strict filters also match entities with more component
types than the filter names; strict ones only entities with exactly those types. Needs CLUSTER
DESCRIBE_CONFIGS.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.metadata.client_quotas import ENTITY_TYPES, QuotaEntity
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse

API_KEY = 48
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

_Component = DescribeClientQuotasRequest.ComponentData


def _filter_error(components: list[_Component]) -> str | None:
    types = [c.entity_type for c in components]
    if len(set(types)) != len(types):
        return "Duplicate entity type in the filter"
    for component in components:
        if component.entity_type not in ENTITY_TYPES:
            return f"Custom entity type '{component.entity_type}' not supported"
        if component.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            return f"Unknown match type {component.match_type}"
    return None


def _matches(entity: QuotaEntity, components: list[_Component], strict: bool) -> bool:
    names = dict(entity)
    if strict and set(names) != {c.entity_type for c in components}:
        return False
    for component in components:
        if component.entity_type not in names:
            return False
        name = names[component.entity_type]
        if component.match_type == MATCH_EXACT and name != component.match:
            return False
        if component.match_type == MATCH_DEFAULT and name is not None:
            return False
        if component.match_type == MATCH_SPECIFIED and name is None:
            return False
    return True


def handle(context: BrokerContext, request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if not context.allowed(AclOperation.DESCRIBE_CONFIGS):
        return DescribeClientQuotasResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                            error_message="Cluster authorization failed.", entries=None)
    reason = _filter_error(request.components)
    if reason is not None:
        return DescribeClientQuotasResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=reason, entries=None)
    entries = []
    for entity, values in sorted(context.metadata.image.client_quotas.items(), key=lambda item: repr(item[0])):
        if values and _matches(entity, request.components, request.strict):
            entries.append(DescribeClientQuotasResponse.EntryData(
                entity=[DescribeClientQuotasResponse.EntityData(entity_type=kind, entity_name=name)
                        for kind, name in entity],
                values=[DescribeClientQuotasResponse.ValueData(key=key, value=value)
                        for key, value in sorted(values.items())]))
    return DescribeClientQuotasResponse(error_code=ErrorCode.NONE, error_message=None, entries=entries)


HANDLERS = [Handler(API_KEY, 0, 1, handle)]
