"""The metadata image: an immutable view of the cluster built by replaying `__cluster_metadata`.

Readers (request handlers, replication, the controller) share an image without locks because
nothing in it can change; only replaying records through `gregor.metadata.delta` makes a new
one. Collections are tuples and read-only mappings.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from gregor.metadata.acls import StandardAcl
from gregor.metadata.client_quotas import QuotaEntity
from gregor.metadata.features import METADATA_VERSION as METADATA_VERSION_FEATURE
from gregor.protocol.scram import ScramCredential

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
NO_LEADER = -1

_EMPTY: Mapping[Any, Any] = MappingProxyType({})  # empty, so a mapping of any key and value type


@dataclass(frozen=True)
class BrokerEndpoint:
    """One advertised listener of a broker (security protocol as Kafka's id: 0 PLAINTEXT...)."""

    listener: str
    host: str
    port: int
    security_protocol: int = 0


@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    incarnation_id: uuid.UUID
    epoch: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool = False
    log_dirs: tuple[uuid.UUID, ...] = ()
    #: The feature ranges the broker registered with (name -> (min, max)), which UpdateFeatures checks.
    supported_features: Mapping[str, tuple[int, int]] = field(default_factory=lambda: _EMPTY)

    def endpoint(self, listener: str) -> BrokerEndpoint | None:
        for endpoint in self.endpoints:
            if endpoint.listener == listener:
                return endpoint
        return None


@dataclass(frozen=True)
class PartitionRegistration:
    """A partition's assignment and leadership; `partition_epoch` grows at every change."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    directories: tuple[uuid.UUID, ...] = ()
    leader_recovery_state: int = 0

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]

    @property
    def replication_factor(self) -> int:
        first = self.partitions.get(0)
        return len(first.replicas) if first is not None else 0


@dataclass(frozen=True)
class MetadataImage:
    """Everything the metadata log says, as of `highest_offset` (written in leader `epoch`).

    `cluster_id` is not in the log (Kafka keeps it in meta.properties); it is carried over from
    the image a delta starts from. `configs` is keyed by (resource type, resource name): topic
    configs by topic name, broker configs by broker id as a string ("" = cluster-wide default).
    `acls` are the access control entries by id; `client_quotas` the quota values by entity.
    """

    cluster_id: str | None = None
    features: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=lambda: _EMPTY)
    topics: Mapping[str, TopicImage] = field(default_factory=lambda: _EMPTY)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=lambda: _EMPTY)
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=lambda: _EMPTY)
    acls: Mapping[uuid.UUID, StandardAcl] = field(default_factory=lambda: _EMPTY)
    client_quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=lambda: _EMPTY)
    next_producer_id: int = 0
    highest_offset: int = -1
    epoch: int = -1
    #: SCRAM credentials by (user name, Kafka mechanism id: 1 SHA-256, 2 SHA-512).
    scram_credentials: Mapping[tuple[str, int], ScramCredential] = field(default_factory=lambda: _EMPTY)

    @property
    def metadata_version(self) -> int:
        """The finalized metadata.version feature level; 0 before the cluster is bootstrapped."""
        return self.features.get(METADATA_VERSION_FEATURE, 0)

    @property
    def is_empty(self) -> bool:
        return self.highest_offset < 0

    def topic_config(self, topic: str) -> Mapping[str, str]:
        return self.configs.get((TOPIC_RESOURCE, topic), _EMPTY)

    def broker_config(self, broker_id: int | str) -> Mapping[str, str]:
        """Dynamic configs of one broker; pass "" for the cluster-wide dynamic defaults."""
        return self.configs.get((BROKER_RESOURCE, str(broker_id)), _EMPTY)

    def unfenced_brokers(self) -> list[int]:
        return sorted(b for b, registration in self.brokers.items() if not registration.fenced)

    def partition(self, topic: str, index: int) -> PartitionRegistration | None:
        image = self.topics.get(topic)
        return image.partitions.get(index) if image is not None else None
