"""The narrow interfaces handlers and broker components are given instead of the whole broker.

Each is one concept, listing only what its users call, implemented by one component that
`server.py`, the composition root, builds and hands out: `PartitionHost` by
`hosted_partitions.HostedPartitions`, `MetadataView` by `broker_metadata.BrokerMetadata`,
`ControllerGateway` by `controller_client.ControllerClient`, `QuorumService` by
`controller_server.ControllerServer`. Typing against these rather than the concrete classes keeps
a handler's dependencies visible and lets a test hand it a small fake.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, Mapping, Protocol, Sequence, TypeVar

from gregor.broker.authorization import BrokerAuthorizer
from gregor.broker.config import BrokerConfig
from gregor.broker.fetch_purgatory import FetchPurgatory
from gregor.broker.security.listener_tls import ListenerTls
from gregor.controller.broker_heartbeats import BrokerHeartbeats
from gregor.controller.operations import ControllerResult, CreatableTopic, CreateTopicResult
from gregor.controller.quorum_controller import QuorumController
from gregor.metadata.image import MetadataImage
from gregor.metadata.topic_configs import ConfigEntry
from gregor.protocol.messages import Message
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest
from gregor.replication.effects import Effect
from gregor.replication.fetch_sessions import FetchSessions
from gregor.replication.partition import Partition
from gregor.storage.log import Log

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AdvertisedEndpoint:
    """Where clients of one listener reach a broker."""

    host: str
    port: int
    rack: str | None


class PartitionHost(Protocol):
    """The partitions this broker hosts and the replica side that carries out their effects."""

    @property
    def consumer_fetches(self) -> FetchPurgatory:
        """Consumers' fetches waiting for enough bytes below their partitions' high watermarks."""

    @property
    def replica_fetches(self) -> FetchPurgatory:
        """Followers' fetches waiting for records to be appended."""

    @property
    def fetch_sessions(self) -> FetchSessions:
        """Followers' incremental fetch sessions (KIP-227)."""

    @property
    def max_uncompressed_bytes(self) -> int:
        """The most a legacy message set may inflate to when converted."""

    def partition(self, topic: str, index: int) -> Partition | None:
        """The hosted partition, None when this broker holds no replica of it."""

    def apply(self, partition: Partition, effects: Iterable[Effect]) -> None:
        """Carry out what a partition asked for (fetches, ISR proposals, produce answers)."""

    def on_leader_append(self, partition: Partition, effects: Iterable[Effect] | None = None) -> None:
        """Records were appended as leader (`effects`: what the partition asked for while the
        appender waits on them, such as `await_replication`'s): wake what waits for the records."""

    def log_dirs(self) -> Sequence[str]:
        """The configured log dirs, in order."""

    def logs_in(self, directory: str) -> Mapping[tuple[str, int], Log]:
        """The partition logs held in one log dir."""


class MetadataView(Protocol):
    """The cluster as this broker last saw it committed, and this broker's place in it."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def node_id(self) -> int: ...

    @property
    def controller_id(self) -> int:
        """The id Metadata and DescribeCluster answer as the controller."""

    @property
    def broker_epoch(self) -> int:
        """This broker's registration epoch, -1 before it registered."""

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...

    def is_valid_topic_name(self, name: str) -> bool: ...

    def endpoints_for(self, listener: str) -> Iterable[tuple[int, AdvertisedEndpoint]]:
        """The unfenced brokers' endpoints on `listener`, by broker id."""

    def replica_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        """Where followers reach broker `broker_id`."""

    def topic_config_entries(self, topic: str) -> list[ConfigEntry]:
        """The DescribeConfigs rows of a topic."""


class ControllerGateway(Protocol):
    """The active controller, as a broker reaches it (in process or over sockets)."""

    async def send_to_controller(self, request: Message, version: int, timeout_s: float) -> Message:
        """The controller's answer to `request`; KafkaError when none could be had."""

    async def create_topics(self, topics: list[CreatableTopic]) -> list[CreateTopicResult]: ...

    async def auto_create_topics(self, names: Sequence[str]) -> None: ...

    async def next_producer_id(self) -> int: ...


class QuorumService(Protocol):
    """What the controller listener's handlers use: the raft quorum and the controller on it."""

    @property
    def image(self) -> MetadataImage:
        """The committed image."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def controller(self) -> QuorumController: ...

    @property
    def authorizer(self) -> BrokerAuthorizer:
        """Who may use the controller listener (CLUSTER_ACTION on the cluster)."""

    @property
    def heartbeats(self) -> BrokerHeartbeats: ...

    @property
    def node_id(self) -> int: ...

    @property
    def listener_tls(self) -> ListenerTls | None:
        """This node's reloadable TLS stores (its controller listener's, and a combined node's broker's)."""

    @property
    def next_offset(self) -> int:
        """Where the next appended record lands."""

    @property
    def leader_id(self) -> int | None:
        """The active controller (the quorum leader) as this node knows it; None while there is none."""

    def submit(self, operation: Callable[[], ControllerResult[T]]) -> Awaitable[T]:
        """Run a controller operation on the committed image and commit its records."""

    def raft_request(self, sender_id: int, request: Message) -> asyncio.Future[Message]:
        """A raft request (Vote, BeginQuorumEpoch, Fetch, ...) from a peer, answered by the quorum."""

    def describe_quorum(self, request: DescribeQuorumRequest) -> asyncio.Future[Message]: ...

    def voter_endpoints(self) -> dict[int, list[tuple[str, str, int]]]:
        """Each voter's controller endpoints as (listener, host, port), for DescribeQuorum v2."""

    def unclean_allowed(self, topic: str) -> bool: ...
