"""DescribeCluster (key 60), v0–v1, on a controller listener (KIP-919): the controllers' endpoints,
for admin clients bootstrapped with `bootstrap.controllers` (`gregor configs --bootstrap-controller`).

As Kafka's ControllerApis: ALTER on the cluster is required where the listener has an authorizer
(CLUSTER_AUTHORIZATION_FAILED otherwise), a request for broker endpoints is MISMATCHED_ENDPOINT_TYPE,
and the controller id is the quorum leader, or -1 while there is none among the endpoints.
Kafka lists the endpoints controllers registered for the request's listener (ControllerRegistration
records); Gregor's controllers do not register, so the endpoints are the voters' addresses in
`controller.quorum.voters`, without a rack.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.broker.handlers.authorized_operations import OMITTED, operation_bits
from gregor.broker.handlers.describe_cluster import API_KEY, CONTROLLERS, endpoint_refusal
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeClusterRequest, DescribeClusterResponse

_Broker = DescribeClusterResponse.DescribeClusterBroker


def handle(context: QuorumContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    quorum = context.quorum

    def allowed(operation: AclOperation) -> bool:
        return quorum.authorizer.allowed(context.connection, operation, ResourceType.CLUSTER)

    if not allowed(AclOperation.ALTER):
        return DescribeClusterResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                       error_message="Cluster authorization failed.", endpoint_type=CONTROLLERS)
    refusal = endpoint_refusal(context.version, request, CONTROLLERS)
    if refusal is not None:
        return refusal
    voters = quorum.config.quorum_voters()
    operations = OMITTED
    if request.include_cluster_authorized_operations:
        operations = operation_bits(allowed, ResourceType.CLUSTER) if allowed(AclOperation.DESCRIBE) else 0
    leader = quorum.leader_id
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE, endpoint_type=CONTROLLERS, cluster_id=quorum.image.cluster_id or "",
        controller_id=leader if leader in voters else -1,
        brokers=[_Broker(broker_id=node_id, host=host, port=port) for node_id, (host, port) in sorted(voters.items())],
        cluster_authorized_operations=operations)


HANDLERS = [Handler(API_KEY, 0, 1, handle)]
