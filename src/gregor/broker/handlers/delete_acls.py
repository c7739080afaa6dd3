"""DeleteAcls (key 31), v0–v3: the ACLs each filter matches, removed by the controller.

v0 filters have no pattern type: they match LITERAL ACLs only (the codec's default). Brokers check
CLUSTER ALTER before forwarding.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.acl_control import AclDeletionResult
from gregor.metadata.acls import AclFilter
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import DeleteAclsRequest, DeleteAclsResponse

API_KEY = 31


def acl_filter(f: DeleteAclsRequest.DeleteAclsFilter) -> AclFilter:
    return AclFilter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                     f.host_filter, f.operation, f.permission_type)


async def handle(context: QuorumContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    quorum = context.quorum
    filters = [acl_filter(f) for f in request.filters]
    try:
        results = await quorum.submit(lambda: quorum.controller.delete_acls(filters))
    except KafkaError as error:
        results = [AclDeletionResult(ErrorCode(error.code), str(error)) for _ in filters]
    matching = DeleteAclsResponse.DeleteAclsMatchingAcl
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
        DeleteAclsResponse.DeleteAclsFilterResult(
            error_code=result.error, error_message=result.message,
            matching_acls=[matching(error_code=0, error_message=None, resource_type=acl.resource_type,
                                    resource_name=acl.resource_name, pattern_type=acl.pattern_type,
                                    principal=acl.principal, host=acl.host, operation=acl.operation,
                                    permission_type=acl.permission) for acl in result.deleted])
        for result in results])


def error_response(request: DeleteAclsRequest, code: int, message: str) -> DeleteAclsResponse:
    return DeleteAclsResponse(filter_results=[DeleteAclsResponse.DeleteAclsFilterResult(
        error_code=code, error_message=message) for _ in request.filters])


HANDLERS = [Handler(API_KEY, 0, 3, handle)]
