"""Replaying metadata records onto an image: the only way a new MetadataImage is made.

A delta collects the changes of a run of records and `apply()` freezes them into a new image;
`changed_topics` / `deleted_topics` tell the broker which local logs to create or remove.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from gregor.metadata.image import (
    BrokerEndpoint, BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage,
)


class MetadataDelta:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.cluster_id = image.cluster_id
        self.metadata_version = image.metadata_version
        self.brokers = dict(image.brokers)
        self.topic_names = {topic_id: t.name for topic_id, t in image.topics_by_id.items()}
        self.partitions = {topic_id: dict(t.partitions) for topic_id, t in image.topics_by_id.items()}
        self.configs = {key: dict(values) for key, values in image.configs.items()}
        self.next_producer_id = image.next_producer_id
        self.highest_offset = image.highest_offset
        self.changed_topics: set[uuid.UUID] = set()
        self.deleted_topics: dict[uuid.UUID, str] = {}

    def replay(self, record: Any, offset: int) -> None:
        handler = getattr(self, "_replay_" + type(record).__name__, None)
        if handler is not None:
            handler(record)
        self.highest_offset = max(self.highest_offset, offset)

    def _replay_FeatureLevelRecord(self, record: Any) -> None:
        if record.name == "metadata.version":
            self.metadata_version = record.feature_level

    def _replay_RegisterBrokerRecord(self, record: Any) -> None:
        endpoints = tuple(BrokerEndpoint(e.name, e.host, e.port, e.security_protocol, record.rack)
                          for e in record.end_points)
        self.brokers[record.broker_id] = BrokerRegistration(
            record.broker_id, record.incarnation_id, record.broker_epoch, endpoints, record.rack,
            record.fenced)

    def _replay_UnregisterBrokerRecord(self, record: Any) -> None:
        self.brokers.pop(record.broker_id, None)

    def _set_fenced(self, broker_id: int, fenced: bool) -> None:
        broker = self.brokers.get(broker_id)
        if broker is not None:
            self.brokers[broker_id] = replace(broker, fenced=fenced)

    def _replay_FenceBrokerRecord(self, record: Any) -> None:
        self._set_fenced(record.id, True)

    def _replay_UnfenceBrokerRecord(self, record: Any) -> None:
        self._set_fenced(record.id, False)

    def _replay_BrokerRegistrationChangeRecord(self, record: Any) -> None:
        if record.fenced != 0:
            self._set_fenced(record.broker_id, record.fenced == 1)

    def _replay_TopicRecord(self, record: Any) -> None:
        self.topic_names[record.topic_id] = record.name
        self.partitions.setdefault(record.topic_id, {})
        self.changed_topics.add(record.topic_id)

    def _replay_PartitionRecord(self, record: Any) -> None:
        self.partitions.setdefault(record.topic_id, {})[record.partition_id] = PartitionRegistration(
            tuple(record.replicas), tuple(record.isr), record.leader, record.leader_epoch,
            record.partition_epoch)
        self.changed_topics.add(record.topic_id)

    def _replay_PartitionChangeRecord(self, record: Any) -> None:
        current = self.partitions.get(record.topic_id, {}).get(record.partition_id)
        if current is None:
            return
        leader, leader_epoch = current.leader, current.leader_epoch
        if record.leader != -2:
            leader, leader_epoch = record.leader, current.leader_epoch + 1
        self.partitions[record.topic_id][record.partition_id] = PartitionRegistration(
            tuple(record.replicas) if record.replicas is not None else current.replicas,
            tuple(record.isr) if record.isr is not None else current.isr,
            leader, leader_epoch, current.partition_epoch + 1)
        self.changed_topics.add(record.topic_id)

    def _replay_RemoveTopicRecord(self, record: Any) -> None:
        name = self.topic_names.pop(record.topic_id, None)
        self.partitions.pop(record.topic_id, None)
        self.changed_topics.discard(record.topic_id)
        if name is not None:
            self.deleted_topics[record.topic_id] = name
            self.configs.pop((2, name), None)

    def _replay_ConfigRecord(self, record: Any) -> None:
        values = self.configs.setdefault((record.resource_type, record.resource_name), {})
        if record.value is None:
            values.pop(record.name, None)
        else:
            values[record.name] = record.value

    def _replay_ProducerIdsRecord(self, record: Any) -> None:
        self.next_producer_id = max(self.next_producer_id, record.next_producer_id)

    def apply(self) -> MetadataImage:
        topics = {}
        by_id = {}
        for topic_id, name in self.topic_names.items():
            topic = TopicImage(name, topic_id, MappingProxyType(dict(self.partitions.get(topic_id, {}))))
            topics[name] = topic
            by_id[topic_id] = topic
        return MetadataImage(
            cluster_id=self.cluster_id, metadata_version=self.metadata_version,
            brokers=MappingProxyType(dict(self.brokers)), topics=MappingProxyType(topics),
            topics_by_id=MappingProxyType(by_id),
            configs=MappingProxyType({k: MappingProxyType(dict(v)) for k, v in self.configs.items() if v}),
            next_producer_id=self.next_producer_id, highest_offset=self.highest_offset,
        )
