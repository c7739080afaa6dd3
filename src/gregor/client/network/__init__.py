"""The network core of Gregor's client, shared by the admin client, producer and consumer.

Layers, bottom up (each module holds one concept):

- `wire.WireSession` — sans-IO framing, correlation ids and in-order response matching.
- `request_frames` — request frames whose large record batches are written as they are, not copied.
- `versions` — the client's API version ranges and the choice of version per broker.
- `connection.BrokerConnection` — one negotiated TCP connection (asyncio).
- `cluster.ClusterMetadata` — sans-IO picture of brokers, controller and topic partitions.
- `client.NetworkClient` — connections per node, least-loaded routing, metadata refresh.
- `controllers` — an admin client bootstrapped from controllers (KIP-919): DescribeCluster as its metadata.
- `coordinators.Coordinators` — FindCoordinator lookups, batched and cached.
- `runner.NetworkThread` — the one thread and event loop that run all of the above.
- `settings.NetworkSettings` — the configuration keys all of the above read.

Threading contract: a client instance owns one `NetworkThread`. Every object of this package
lives on that thread's loop and is used only from coroutines or callbacks running there;
synchronous user-facing methods reach them through `NetworkThread.run/submit/spawn/call_soon`.
"""

from gregor.protocol.backoff import ExponentialBackoff
from gregor.client.network.client import NetworkClient
from gregor.client.network.cluster import (
    STALE_METADATA_ERRORS, ByPartition, ClusterMetadata, Node, PartitionMetadata, TopicMetadata, TopicPartition,
)
from gregor.client.network.connection import BrokerConnection
from gregor.client.network.coordinators import COORDINATOR_MOVED_ERRORS, Coordinators, CoordinatorType
from gregor.client.network.runner import NetworkThread
from gregor.client.network.settings import NetworkSettings
from gregor.client.network.versions import CLIENT_API_VERSIONS, BrokerApiVersions
from gregor.client.network.wire import WireSession

__all__ = [
    "ByPartition",
    "BrokerApiVersions", "BrokerConnection", "CLIENT_API_VERSIONS", "COORDINATOR_MOVED_ERRORS",
    "ClusterMetadata", "CoordinatorType", "Coordinators", "ExponentialBackoff",
    "NetworkClient", "NetworkSettings", "NetworkThread", "Node", "PartitionMetadata",
    "STALE_METADATA_ERRORS", "TopicMetadata", "TopicPartition", "WireSession",
]
