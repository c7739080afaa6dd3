"""DescribeConfigs (key 32), v0–v4, on a controller listener (KIP-919: `kafka-configs
--bootstrap-controller`): the controller's own broker resource (its id: every key with its static
and dynamic layers) and the cluster-wide default (""), described as a broker describes its own
(`describe_configs.describe_broker`), with DESCRIBE_CONFIGS on the cluster where the listener has
an authorizer (CLUSTER_AUTHORIZATION_FAILED otherwise).

Kafka's controllers also describe topic and group resources from their metadata cache; Gregor's
answer INVALID_REQUEST for them, pointing at the brokers.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.broker.handlers.describe_configs import API_KEY, describe_broker
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.metadata.image import BROKER_RESOURCE
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse


def handle(context: QuorumContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    quorum = context.quorum
    results = []
    for resource in request.resources:
        if resource.resource_type == BROKER_RESOURCE:
            allowed = quorum.authorizer.allowed(context.connection, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER)
            results.append(describe_broker(quorum, context.version, request, resource, allowed))
            continue
        results.append(DescribeConfigsResponse.DescribeConfigsResult(
            error_code=ErrorCode.INVALID_REQUEST, resource_type=resource.resource_type,
            resource_name=resource.resource_name, configs=[],
            error_message=f"A controller describes broker configs only, not resource type {resource.resource_type}: "
                          f"ask a broker (--bootstrap-server)"))
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


HANDLERS = [Handler(API_KEY, 0, 4, handle)]
