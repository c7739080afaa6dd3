"""The metadata image: an immutable view of the cluster built by replaying `__cluster_metadata`.

Brokers read the image; only replaying records (gregor.metadata.delta) makes a new one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


@dataclass(frozen=True)
class BrokerEndpoint:
    listener: str
    host: str
    port: int
    security_protocol: int
    rack: str | None = None


@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    incarnation_id: uuid.UUID
    epoch: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool


@dataclass(frozen=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]


_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class MetadataImage:
    cluster_id: str | None = None
    metadata_version: int = 0
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=lambda: _EMPTY)
    topics: Mapping[str, TopicImage] = field(default_factory=lambda: _EMPTY)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=lambda: _EMPTY)
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=lambda: _EMPTY)
    next_producer_id: int = 0
    highest_offset: int = -1

    def topic_config(self, topic: str) -> Mapping[str, str]:
        return self.configs.get((TOPIC_RESOURCE, topic), _EMPTY)

    def broker_config(self, broker_id: int) -> Mapping[str, str]:
        return self.configs.get((BROKER_RESOURCE, str(broker_id)), _EMPTY)
