"""KIP-919's `bootstrap.controllers`: an admin client that talks to the controller quorum itself.

Kafka's admin client, bootstrapped from controllers, learns the cluster with DescribeCluster
(endpoint_type 2) instead of Metadata: the nodes are the controllers, the controller id the active
one. `metadata_request` is that question and `as_metadata` its answer in the shape
`ClusterMetadata.update` takes (brokers and controller only; a controller knows no topics here).
A broker asked for controllers answers MISMATCHED_ENDPOINT_TYPE, raised as the error it is.
"""

from __future__ import annotations

from gregor.client.errors import error_for
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeClusterRequest, DescribeClusterResponse, MetadataResponse

CONTROLLER_ENDPOINTS = 2
#: DescribeCluster v1 is the first with an endpoint type
VERSIONS = (1, 1)


def metadata_request() -> DescribeClusterRequest:
    return DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=CONTROLLER_ENDPOINTS)


def as_metadata(response: DescribeClusterResponse) -> MetadataResponse:
    """The controllers as a MetadataResponse's brokers; a refusal raises its KafkaException."""
    if response.error_code != ErrorCode.NONE:
        raise error_for(response.error_code, response.error_message)
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=node.broker_id, host=node.host, port=node.port,
                                                         rack=node.rack) for node in response.brokers],
        cluster_id=response.cluster_id, controller_id=response.controller_id, topics=[])
