"""The client's picture of the cluster, built from Metadata responses (sans-IO).

Brokers (node id → address and rack), the controller, the cluster id, and per topic its id and
partitions (leader, leader epoch, replicas, ISR). Until the first Metadata response the only
known nodes are the `bootstrap.servers`, under negative node ids (-1, -2, ...) as in Kafka's
Java client; the first response replaces them.

Refresh timing is decided here and carried out by the network client: a refresh is due when
someone asked for one (after an error that means stale metadata, see `STALE_METADATA_ERRORS`)
and the retry backoff since the last failed attempt has passed, or when the metadata is older
than `metadata.max.age.ms`. Times are milliseconds of the caller's clock.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Mapping, NamedTuple, TypeAlias, TypeVar, Union

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.primitives import ZERO_UUID

STALE_METADATA_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.INCONSISTENT_TOPIC_ID,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.BROKER_NOT_AVAILABLE,
    ErrorCode.NOT_CONTROLLER,
})
"""Errors in a response that mean the client's metadata is out of date (Kafka's
InvalidMetadataException subclasses, plus NOT_CONTROLLER for controller-routed requests)."""


class TopicPartition(NamedTuple):
    """A partition of a topic; equal to and interchangeable with a plain (topic, partition) tuple."""

    topic: str
    partition: int


_V = TypeVar("_V")
ByPartition: TypeAlias = Union[Mapping[TopicPartition, _V], Mapping[tuple[str, int], _V]]
"""A value per partition, keyed by TopicPartition or by plain (topic, partition) tuples: a
Mapping's key type is invariant, so a signature naming only tuples refuses TopicPartition keys."""


@dataclass(frozen=True)
class Node:
    """A broker as the cluster advertises it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionMetadata:
    """One partition: node ids of its leader (-1 if none), replicas, in-sync and offline replicas."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = ErrorCode.NONE


@dataclass(frozen=True)
class TopicMetadata:
    """One topic; `topic_id` is None when the broker's Metadata version has no topic ids."""

    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)
    error_code: int = ErrorCode.NONE


class ClusterMetadata:
    """Brokers, controller and topics, replaced or merged by each Metadata response."""

    def __init__(self, bootstrap_servers: Iterable[tuple[str, int]], max_age_ms: float) -> None:
        self.brokers: dict[int, Node] = {
            -(index + 1): Node(-(index + 1), host, port) for index, (host, port) in enumerate(bootstrap_servers)}
        self.bootstrapped = False
        self.cluster_id: str | None = None
        self.controller_id: int | None = None
        self.topics: dict[str, TopicMetadata] = {}
        self.topic_errors: dict[str, int] = {}
        self.wanted_topics: set[str] = set()
        self.want_all_topics = False
        self.max_age_ms = max_age_ms
        self.update_requested = False
        self.failed_attempts = 0
        self._last_update_ms: float | None = None
        self._last_attempt_ms: float | None = None
        self._extra_nodes: dict[int, Node] = {}

    def node(self, node_id: int) -> Node | None:
        """A broker, or a node known only from a FindCoordinator answer."""
        return self.brokers.get(node_id) or self._extra_nodes.get(node_id)

    def add_node(self, node: Node) -> None:
        """Remember an address learned outside Metadata (a coordinator); brokers take precedence."""
        if node.node_id not in self.brokers:
            self._extra_nodes[node.node_id] = node

    def topics_to_refresh(self) -> list[str] | None:
        """What a routine refresh asks for: None for every topic, else the wanted ones."""
        return None if self.want_all_topics else sorted(self.wanted_topics)

    def request_update(self) -> None:
        self.update_requested = True

    def ms_until_refresh(self, now_ms: float, backoff_ms: float) -> float:
        """0 when a refresh is due; `math.inf` when none will ever be without a request."""
        if self.update_requested:
            if self._last_attempt_ms is None:
                return 0.0
            return max(0.0, self._last_attempt_ms + backoff_ms - now_ms)
        if self._last_update_ms is None:
            return math.inf
        return max(0.0, self._last_update_ms + self.max_age_ms - now_ms)

    def record_failure(self, now_ms: float) -> None:
        """A refresh failed: keep it requested and start the retry backoff."""
        self._last_attempt_ms = now_ms
        self.failed_attempts += 1
        self.update_requested = True

    def update(self, response: Any, now_ms: float, requested_topics: Collection[str] | None) -> None:
        """Apply a MetadataResponse to a request for `requested_topics` (None: every topic)."""
        if response.brokers:
            self.brokers = {broker.node_id: Node(broker.node_id, broker.host, broker.port, broker.rack)
                            for broker in response.brokers}
            self.bootstrapped = True
            for node_id in self.brokers:
                self._extra_nodes.pop(node_id, None)
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id if response.controller_id >= 0 else None
        # New mappings, swapped in whole: the application thread reads them while the network
        # thread updates (a consumer matching its pattern must never see a half-filled map).
        topics = {} if requested_topics is None else dict(self.topics)
        topic_errors = {} if requested_topics is None else dict(self.topic_errors)
        for topic in response.topics:
            if topic.name is None:
                continue
            if topic.error_code not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE):
                topics.pop(topic.name, None)
                topic_errors[topic.name] = topic.error_code
                continue
            topic_errors.pop(topic.name, None)
            topics[topic.name] = _topic_metadata(topic)
        self.topics, self.topic_errors = topics, topic_errors
        self._last_update_ms = now_ms
        self._last_attempt_ms = now_ms
        self.failed_attempts = 0
        self.update_requested = False

    def partition(self, topic_partition: tuple[str, int]) -> PartitionMetadata | None:
        topic = self.topics.get(topic_partition[0])
        return topic.partitions.get(topic_partition[1]) if topic else None

    def group_by_leader(self, partitions: Iterable[tuple[str, int]],
                        ) -> tuple[dict[int, list[TopicPartition]], dict[TopicPartition, int]]:
        """Partitions by the node id of their leader, and the error code of those with none.

        A topic missing from the metadata is UNKNOWN_TOPIC_OR_PARTITION (or the error the
        broker gave for it), a missing partition UNKNOWN_TOPIC_OR_PARTITION, a partition
        without a live leader LEADER_NOT_AVAILABLE.
        """
        by_leader: dict[int, list[TopicPartition]] = {}
        errors: dict[TopicPartition, int] = {}
        for topic, index in partitions:
            key = TopicPartition(topic, index)
            metadata = self.partition(key)
            if metadata is None:
                errors[key] = (self.topic_errors.get(topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                               if topic not in self.topics else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif metadata.leader < 0 or metadata.leader not in self.brokers:
                errors[key] = ErrorCode.LEADER_NOT_AVAILABLE
            else:
                by_leader.setdefault(metadata.leader, []).append(key)
        return by_leader, errors


def _topic_metadata(topic: Any) -> TopicMetadata:
    partitions = {
        partition.partition_index: PartitionMetadata(
            topic=topic.name, partition=partition.partition_index, leader=partition.leader_id,
            leader_epoch=partition.leader_epoch, replicas=tuple(partition.replica_nodes),
            isr=tuple(partition.isr_nodes), offline_replicas=tuple(partition.offline_replicas),
            error_code=partition.error_code)
        for partition in topic.partitions}
    topic_id = topic.topic_id if topic.topic_id != ZERO_UUID else None
    return TopicMetadata(name=topic.name, topic_id=topic_id, is_internal=topic.is_internal,
                         partitions=partitions, error_code=topic.error_code)
