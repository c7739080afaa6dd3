"""DescribeAcls (key 29), v0–v3: the committed ACLs a filter matches, from this broker's image.

Needs CLUSTER DESCRIBE; without an authorizer Kafka answers SECURITY_DISABLED. v0 filters have
no pattern type and match LITERAL ACLs (the codec's default). Resources are answered grouped by
(type, name, pattern), as Kafka groups them.
"""

from __future__ import annotations

from collections import defaultdict

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclFilter, AclOperation, StandardAcl
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeAclsRequest, DescribeAclsResponse

API_KEY = 29
NO_AUTHORIZER = "No Authorizer is configured."


def handle(context: BrokerContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    if not context.authorizer.enabled:
        return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
    if not context.allowed(AclOperation.DESCRIBE):
        return DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                    error_message="Cluster authorization failed.")
    acl_filter = AclFilter(request.resource_type_filter, request.resource_name_filter, request.pattern_type_filter,
                           request.principal_filter, request.host_filter, request.operation, request.permission_type)
    reason = acl_filter.unknown_element()
    if reason is not None:
        return DescribeAclsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=reason)
    grouped: dict[tuple[int, str, int], list[StandardAcl]] = defaultdict(list)
    for acl in context.metadata.image.acls.values():
        if acl_filter.matches(acl):
            grouped[(acl.resource_type, acl.resource_name, acl.pattern_type)].append(acl)
    return DescribeAclsResponse(error_code=ErrorCode.NONE, error_message=None, resources=[
        DescribeAclsResponse.DescribeAclsResource(
            resource_type=resource_type, resource_name=name, pattern_type=pattern,
            acls=[DescribeAclsResponse.AclDescription(principal=acl.principal, host=acl.host, operation=acl.operation,
                                                      permission_type=acl.permission)
                  for acl in sorted(acls, key=lambda a: (a.principal, a.host, a.operation, a.permission))])
        for (resource_type, name, pattern), acls in sorted(grouped.items())])


HANDLERS = [Handler(API_KEY, 0, 3, handle)]
