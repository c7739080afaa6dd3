"""DescribeCluster (key 60), v0–v1: brokers, controller and cluster id for admin clients (CLUSTER
DESCRIBE, else CLUSTER_AUTHORIZATION_FAILED), and the cluster's authorized operations when asked.

A client listener serves broker endpoints (endpoint_type 1); a request for controllers
(endpoint_type 2, KIP-919) is refused as Kafka refuses it (`endpoint_refusal`): the controller
listener answers those (`controller_describe_cluster`)."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.authorized_operations import OMITTED, authorized_operations
from gregor.broker.network import CloseConnection
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeClusterRequest, DescribeClusterResponse

API_KEY = 60
BROKERS, CONTROLLERS = 1, 2
_ENDPOINT_TYPES = {BROKERS: "BROKER", CONTROLLERS: "CONTROLLER"}


def endpoint_refusal(version: int, request: DescribeClusterRequest, served: int) -> DescribeClusterResponse | None:
    """Kafka's answer to endpoints of a type this listener does not serve (None: it serves them):
    UNSUPPORTED_ENDPOINT_TYPE for an unknown type, MISMATCHED_ENDPOINT_TYPE for the other one
    (INVALID_REQUEST at v0, which has no endpoint type)."""
    requested = request.endpoint_type
    if requested not in _ENDPOINT_TYPES:
        code = ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        return DescribeClusterResponse(error_code=code, error_message=f"Unsupported endpoint type {requested}")
    if requested != served:
        code = ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE
        return DescribeClusterResponse(error_code=code, error_message=(
            f"The request was sent to an endpoint of type {_ENDPOINT_TYPES[served]}, but we wanted an endpoint of "
            f"type {_ENDPOINT_TYPES[requested]}"))
    return None


def handle(context: BrokerContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    refusal = endpoint_refusal(context.version, request, BROKERS)
    if refusal is not None:
        return refusal
    if not context.allowed(AclOperation.DESCRIBE):
        return DescribeClusterResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                       error_message="Cluster authorization failed.", endpoint_type=1)
    metadata = context.metadata
    cluster_id = metadata.image.cluster_id
    if cluster_id is None:  # a broker serves requests only once it has its cluster's image
        raise CloseConnection("the broker does not know its cluster id yet")
    brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=node_id, host=e.host, port=e.port, rack=e.rack)
               for node_id, e in metadata.endpoints_for(context.connection.listener)]
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE, endpoint_type=1, cluster_id=cluster_id,
        controller_id=metadata.controller_id, brokers=brokers,
        cluster_authorized_operations=authorized_operations(context, ResourceType.CLUSTER)
        if request.include_cluster_authorized_operations else OMITTED,
    )


HANDLERS = [Handler(API_KEY, 0, 1, handle)]
