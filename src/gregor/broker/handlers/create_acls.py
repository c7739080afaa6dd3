"""CreateAcls (key 30), v0–v3: ACLs committed to the metadata log by the controller.

v0 has no pattern type: its ACLs are LITERAL. Brokers check CLUSTER ALTER (and that an authorizer
is configured) before forwarding (`handlers/acl_forwarding.py`).
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.acl_control import AclCreationResult
from gregor.metadata.acls import acl_from_codes
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import CreateAclsRequest, CreateAclsResponse

API_KEY = 30


async def handle(context: QuorumContext, request: CreateAclsRequest) -> CreateAclsResponse:
    quorum = context.quorum
    acls = [acl_from_codes(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                           c.operation, c.permission_type) for c in request.creations]
    try:
        results = await quorum.submit(lambda: quorum.controller.create_acls(acls))
    except KafkaError as error:
        results = [AclCreationResult(ErrorCode(error.code), str(error)) for _ in acls]
    return CreateAclsResponse(throttle_time_ms=0, results=[
        CreateAclsResponse.AclCreationResult(error_code=result.error, error_message=result.message)
        for result in results])


def error_response(request: CreateAclsRequest, code: int, message: str) -> CreateAclsResponse:
    return CreateAclsResponse(results=[CreateAclsResponse.AclCreationResult(error_code=code, error_message=message)
                                       for _ in request.creations])


HANDLERS = [Handler(API_KEY, 0, 3, handle)]
