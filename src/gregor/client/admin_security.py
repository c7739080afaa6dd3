"""The admin client's ACL and client-quota operations (CreateAcls, DescribeAcls, DeleteAcls,
AlterClientQuotas, DescribeClientQuotas), over `AdminOperations`' retry loop and routing.

Changes go to the controller named in the metadata (any broker forwards them); descriptions to
any broker, which answers from its metadata image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from gregor.client.acls import (
    AclBinding, AclBindingFilter, AclOperation, AclPatternType, AclPermissionType, AclResourceType, QuotaAlteration,
    QuotaEntity,
)
from gregor.client.errors import KafkaException, error_for
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    AlterClientQuotasRequest, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, DescribeClientQuotasRequest,
)

if TYPE_CHECKING:
    from gregor.client.admin import AdminOperations

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def _binding(resource_type: int, name: str, pattern: int, principal: str, host: str, operation: int,
             permission: int) -> AclBinding:
    return AclBinding(AclResourceType(resource_type), name, AclPatternType(pattern), principal, host,
                      AclOperation(operation), AclPermissionType(permission))


async def create_acls(ops: AdminOperations, acls: Sequence[AclBinding],
                      deadline: float) -> dict[AclBinding, KafkaException | None]:
    async def attempt() -> dict[AclBinding, KafkaException | None]:
        request = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=acl.resource_type, resource_name=acl.name, resource_pattern_type=acl.pattern_type,
            principal=acl.principal, host=acl.host, operation=acl.operation, permission_type=acl.permission_type)
            for acl in acls])
        response = await ops._send(request, await ops._controller(deadline), deadline)
        return {acl: None if result.error_code == ErrorCode.NONE else error_for(result.error_code,
                                                                                result.error_message)
                for acl, result in zip(acls, response.results)}

    return await ops._single("create_acls", attempt, deadline)


async def describe_acls(ops: AdminOperations, acl_filter: AclBindingFilter, deadline: float) -> list[AclBinding]:
    async def attempt() -> list[AclBinding]:
        request = DescribeAclsRequest(
            resource_type_filter=acl_filter.resource_type, resource_name_filter=acl_filter.name,
            pattern_type_filter=acl_filter.pattern_type, principal_filter=acl_filter.principal,
            host_filter=acl_filter.host, operation=acl_filter.operation, permission_type=acl_filter.permission_type)
        response = await ops._send(request, None, deadline)
        if response.error_code != ErrorCode.NONE:
            raise error_for(response.error_code, response.error_message)
        return [_binding(resource.resource_type, resource.resource_name, resource.pattern_type, acl.principal,
                         acl.host, acl.operation, acl.permission_type)
                for resource in response.resources for acl in resource.acls]

    return await ops._single("describe_acls", attempt, deadline)


async def delete_acls(ops: AdminOperations, filters: Sequence[AclBindingFilter],
                      deadline: float) -> dict[AclBindingFilter, list[AclBinding] | KafkaException]:
    async def attempt() -> dict[AclBindingFilter, list[AclBinding] | KafkaException]:
        request = DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
            resource_type_filter=f.resource_type, resource_name_filter=f.name, pattern_type_filter=f.pattern_type,
            principal_filter=f.principal, host_filter=f.host, operation=f.operation, permission_type=f.permission_type)
            for f in filters])
        response = await ops._send(request, await ops._controller(deadline), deadline)
        outcome: dict[AclBindingFilter, list[AclBinding] | KafkaException] = {}
        for acl_filter, result in zip(filters, response.filter_results):
            if result.error_code != ErrorCode.NONE:
                outcome[acl_filter] = error_for(result.error_code, result.error_message)
            else:
                outcome[acl_filter] = [_binding(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host,
                                                m.operation, m.permission_type) for m in result.matching_acls]
        return outcome

    return await ops._single("delete_acls", attempt, deadline)


async def alter_client_quotas(ops: AdminOperations, alterations: Sequence[QuotaAlteration], validate_only: bool,
                              deadline: float) -> list[KafkaException | None]:
    async def attempt() -> list[KafkaException | None]:
        request = AlterClientQuotasRequest(validate_only=validate_only, entries=[AlterClientQuotasRequest.EntryData(
            entity=[AlterClientQuotasRequest.EntityData(entity_type=kind, entity_name=name)
                    for kind, name in alteration.entity.items()],
            ops=[AlterClientQuotasRequest.OpData(key=key, value=value or 0.0, remove=value is None)
                 for key, value in alteration.values.items()]) for alteration in alterations])
        response = await ops._send(request, await ops._controller(deadline), deadline)
        return [None if entry.error_code == ErrorCode.NONE else error_for(entry.error_code, entry.error_message)
                for entry in response.entries]

    return await ops._single("alter_client_quotas", attempt, deadline)


async def describe_client_quotas(ops: AdminOperations, components: Sequence[tuple[str, int, str | None]],
                                 strict: bool, deadline: float) -> list[tuple[QuotaEntity, dict[str, float]]]:
    """`components`: (entity type, match type, name) filters, match types EXACT, DEFAULT, SPECIFIED."""
    async def attempt() -> list[tuple[QuotaEntity, dict[str, float]]]:
        request = DescribeClientQuotasRequest(strict=strict, components=[
            DescribeClientQuotasRequest.ComponentData(entity_type=kind, match_type=match_type, match=name)
            for kind, match_type, name in components])
        response = await ops._send(request, None, deadline)
        if response.error_code != ErrorCode.NONE:
            raise error_for(response.error_code, response.error_message)
        found: list[tuple[QuotaEntity, dict[str, float]]] = []
        for entry in response.entries or ():
            entity: dict[str, Any] = {e.entity_type: e.entity_name for e in entry.entity}
            found.append((entity, {value.key: value.value for value in entry.values}))
        return found

    return await ops._single("describe_client_quotas", attempt, deadline)
