"""Replaying metadata records onto an image: the only way a new MetadataImage is made.

A delta collects the effect of a run of committed records; `apply()` freezes it into a new
image. `changed_topics()`, `deleted_topics()`, `changed_partitions()` and `changed_configs()`
tell the broker what to do locally (create or delete partition logs, update log configs).
Semantics follow Kafka's `MetadataDelta`: a record that contradicts the image (a partition of
an unknown topic, fencing a broker at the wrong epoch) is a corrupt log, not something to skip.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Callable, Mapping

from gregor.metadata.acls import acl_from_codes
from gregor.metadata.client_quotas import quota_entity
from gregor.metadata.image import (
    TOPIC_RESOURCE, BrokerEndpoint, BrokerRegistration, MetadataImage, PartitionRegistration,
    TopicImage,
)
from gregor.protocol.messages import (
    AbortTransactionRecord, AccessControlEntryRecord, BeginTransactionRecord,
    BrokerRegistrationChangeRecord, ClientQuotaRecord, ConfigRecord, DelegationTokenRecord,
    EndTransactionRecord, FeatureLevelRecord, FenceBrokerRecord, NoOpRecord, PartitionChangeRecord,
    PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord, RegisterControllerRecord,
    RemoveAccessControlEntryRecord, RemoveDelegationTokenRecord, RemoveTopicRecord,
    RemoveUserScramCredentialRecord, TopicRecord, UnfenceBrokerRecord, UnregisterBrokerRecord,
    UserScramCredentialRecord, ZkMigrationStateRecord,
)
from gregor.protocol.scram import ScramCredential

NO_LEADER_CHANGE = -2
UNASSIGNED_DIRECTORY = uuid.UUID(int=0)

# Valid KRaft records whose state Gregor's image does not model (yet): accepted and skipped, so a
# log written by a newer Gregor or by Kafka still loads.
IGNORED_RECORDS = (
    NoOpRecord, ZkMigrationStateRecord, RegisterControllerRecord, BeginTransactionRecord,
    EndTransactionRecord, AbortTransactionRecord, DelegationTokenRecord, RemoveDelegationTokenRecord,
)


class MetadataReplayError(ValueError):
    """A committed record that cannot apply to the image: the log and the image disagree."""


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(values) if values else ()


class MetadataDelta:
    """Changes on top of `image`; replay records in log order, then `apply()`."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._replaced: MetadataImage | None = None
        self._features = dict(image.features)
        self._brokers = dict(image.brokers)
        self._names = {topic_id: topic.name for topic_id, topic in image.topics_by_id.items()}
        self._ids = {name: topic_id for topic_id, name in self._names.items()}
        self._partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}
        self._configs: dict[tuple[int, str], dict[str, str]] = {}
        self._acls: dict[uuid.UUID, Any] | None = None  # copied from the image at the first ACL record
        self._quotas: dict[Any, dict[str, float]] = {}  # entities touched, with their whole new values
        self._next_producer_id = image.next_producer_id
        self._highest_offset = image.highest_offset
        self._epoch = image.epoch
        self._created: set[uuid.UUID] = set()
        self._changed: dict[uuid.UUID, set[int]] = {}
        self._deleted: dict[uuid.UUID, str] = {}
        self._changed_configs: set[tuple[int, str]] = set()
        self._changed_brokers: set[int] = set()
        self._scram: dict[tuple[str, int], ScramCredential] | None = None

    @classmethod
    def snapshot_of(cls, previous: MetadataImage) -> MetadataDelta:
        """A delta that replaces `previous` wholesale: replay a snapshot's records onto it. What
        changed is reported against `previous` (topics it had that the snapshot lacks are
        deleted; its configs count as changed), as Kafka's snapshot deltas do."""
        delta = cls(MetadataImage(cluster_id=previous.cluster_id))
        delta._replaced = previous
        return delta

    # -- replay

    def replay(self, record: Any, offset: int, epoch: int | None = None) -> None:
        """Apply one committed record found at `offset` (written in leader `epoch`)."""
        handler = _HANDLERS.get(type(record))
        if handler is None:
            if not isinstance(record, IGNORED_RECORDS):
                raise MetadataReplayError(f"{type(record).__name__} is not a metadata record")
        else:
            handler(self, record)
        self._highest_offset = max(self._highest_offset, offset)
        if epoch is not None:
            self._epoch = max(self._epoch, epoch)

    def _replay_feature_level(self, record: FeatureLevelRecord) -> None:
        if record.feature_level == 0:
            self._features.pop(record.name, None)
        else:
            self._features[record.name] = record.feature_level

    def _replay_register_broker(self, record: RegisterBrokerRecord) -> None:
        self._brokers[record.broker_id] = BrokerRegistration(
            broker_id=record.broker_id, incarnation_id=record.incarnation_id, epoch=record.broker_epoch,
            endpoints=tuple(BrokerEndpoint(e.name, e.host, e.port, e.security_protocol)
                            for e in record.end_points),
            rack=record.rack, fenced=record.fenced, in_controlled_shutdown=record.in_controlled_shutdown,
            log_dirs=tuple(record.log_dirs or ()),
            supported_features=MappingProxyType({f.name: (f.min_supported_version, f.max_supported_version)
                                                 for f in record.features or ()}))
        self._changed_brokers.add(record.broker_id)

    def _broker(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        broker = self._brokers.get(broker_id)
        if broker is None:
            raise MetadataReplayError(f"cannot {action} broker {broker_id}: it is not registered")
        if broker.epoch != epoch:
            raise MetadataReplayError(
                f"cannot {action} broker {broker_id} at epoch {epoch}: its registration has epoch {broker.epoch}")
        return broker

    def _replay_unregister_broker(self, record: UnregisterBrokerRecord) -> None:
        self._broker(record.broker_id, record.broker_epoch, "unregister")
        del self._brokers[record.broker_id]
        self._changed_brokers.add(record.broker_id)

    def _set_broker(self, broker: BrokerRegistration, **changes: Any) -> None:
        self._brokers[broker.broker_id] = replace(broker, **changes)
        self._changed_brokers.add(broker.broker_id)

    def _replay_fence_broker(self, record: FenceBrokerRecord) -> None:
        self._set_broker(self._broker(record.id, record.epoch, "fence"), fenced=True)

    def _replay_unfence_broker(self, record: UnfenceBrokerRecord) -> None:
        self._set_broker(self._broker(record.id, record.epoch, "unfence"), fenced=False)

    def _replay_broker_registration_change(self, record: BrokerRegistrationChangeRecord) -> None:
        broker = self._broker(record.broker_id, record.broker_epoch, "change")
        changes: dict[str, Any] = {}
        if record.fenced == 1:
            changes["fenced"] = True
        elif record.fenced == -1:
            changes["fenced"] = False
        if record.in_controlled_shutdown == 1:
            changes["in_controlled_shutdown"] = True
        if record.log_dirs:
            changes["log_dirs"] = tuple(record.log_dirs)
        self._set_broker(broker, **changes)

    def _replay_topic(self, record: TopicRecord) -> None:
        if record.topic_id in self._names:
            raise MetadataReplayError(f"topic id {record.topic_id} already exists")
        if record.name in self._ids:
            raise MetadataReplayError(f"topic '{record.name}' already exists")
        self._names[record.topic_id] = record.name
        self._ids[record.name] = record.topic_id
        self._partitions[record.topic_id] = {}
        self._created.add(record.topic_id)
        self._changed.setdefault(record.topic_id, set())

    def _topic_partitions(self, topic_id: uuid.UUID) -> dict[int, PartitionRegistration]:
        if topic_id not in self._names:
            raise MetadataReplayError(f"unknown topic id {topic_id}")
        partitions = self._partitions.get(topic_id)
        if partitions is None:
            partitions = dict(self.image.topics_by_id[topic_id].partitions)
            self._partitions[topic_id] = partitions
        return partitions

    def _replay_partition(self, record: PartitionRecord) -> None:
        partitions = self._topic_partitions(record.topic_id)
        partitions[record.partition_id] = PartitionRegistration(
            replicas=_ints(record.replicas), isr=_ints(record.isr), leader=record.leader,
            leader_epoch=record.leader_epoch, partition_epoch=record.partition_epoch,
            removing_replicas=_ints(record.removing_replicas), adding_replicas=_ints(record.adding_replicas),
            directories=tuple(record.directories or ()), leader_recovery_state=record.leader_recovery_state)
        self._changed.setdefault(record.topic_id, set()).add(record.partition_id)

    def _replay_partition_change(self, record: PartitionChangeRecord) -> None:
        partitions = self._topic_partitions(record.topic_id)
        current = partitions.get(record.partition_id)
        if current is None:
            raise MetadataReplayError(f"unknown partition {record.partition_id} of topic id {record.topic_id}")
        partitions[record.partition_id] = merge_partition_change(current, record)
        self._changed.setdefault(record.topic_id, set()).add(record.partition_id)

    def _replay_remove_topic(self, record: RemoveTopicRecord) -> None:
        name = self._names.pop(record.topic_id, None)
        if name is None:
            raise MetadataReplayError(f"cannot remove unknown topic id {record.topic_id}")
        del self._ids[name]
        self._partitions.pop(record.topic_id, None)
        self._changed.pop(record.topic_id, None)
        if record.topic_id in self._created:
            self._created.discard(record.topic_id)
        else:
            self._deleted[record.topic_id] = name
        key = (TOPIC_RESOURCE, name)
        if self._config_values(key):
            self._configs[key] = {}
            self._changed_configs.add(key)

    def _config_values(self, key: tuple[int, str]) -> dict[str, str]:
        values = self._configs.get(key)
        if values is None:
            values = dict(self.image.configs.get(key, {}))
            self._configs[key] = values
        return values

    def _replay_config(self, record: ConfigRecord) -> None:
        key = (record.resource_type, record.resource_name)
        values = self._config_values(key)
        if record.value is None:
            values.pop(record.name, None)
        else:
            values[record.name] = record.value
        self._changed_configs.add(key)

    def _acl_map(self) -> dict[uuid.UUID, Any]:
        if self._acls is None:
            self._acls = dict(self.image.acls)
        return self._acls

    def _replay_access_control_entry(self, record: AccessControlEntryRecord) -> None:
        self._acl_map()[record.id] = acl_from_codes(
            record.resource_type, record.resource_name, record.pattern_type, record.principal, record.host,
            record.operation, record.permission_type)

    def _replay_remove_access_control_entry(self, record: RemoveAccessControlEntryRecord) -> None:
        if self._acl_map().pop(record.id, None) is None:
            raise MetadataReplayError(f"cannot remove unknown ACL id {record.id}")

    def _replay_client_quota(self, record: ClientQuotaRecord) -> None:
        entity = quota_entity((component.entity_type, component.entity_name) for component in record.entity)
        values = self._quotas.get(entity)
        if values is None:
            values = self._quotas[entity] = dict(self.image.client_quotas.get(entity, {}))
        if record.remove:
            values.pop(record.key, None)
        else:
            values[record.key] = record.value

    def _replay_producer_ids(self, record: ProducerIdsRecord) -> None:
        if record.next_producer_id < self._next_producer_id:
            raise MetadataReplayError(
                f"producer id block ending at {record.next_producer_id} goes back from {self._next_producer_id}")
        self._next_producer_id = record.next_producer_id

    def _scram_credentials(self) -> dict[tuple[str, int], ScramCredential]:
        if self._scram is None:
            self._scram = dict(self.image.scram_credentials)
        return self._scram

    def _replay_user_scram_credential(self, record: UserScramCredentialRecord) -> None:
        self._scram_credentials()[(record.name, record.mechanism)] = ScramCredential(
            bytes(record.salt), bytes(record.stored_key), bytes(record.server_key), record.iterations)

    def _replay_remove_user_scram_credential(self, record: RemoveUserScramCredentialRecord) -> None:
        self._scram_credentials().pop((record.name, record.mechanism), None)

    # -- what changed

    def changed_topics(self) -> frozenset[uuid.UUID]:
        """Ids of topics created or with a partition created/changed, that still exist."""
        return frozenset(topic_id for topic_id in self._changed if topic_id in self._names)

    def created_topics(self) -> frozenset[uuid.UUID]:
        return frozenset(self._created)

    def deleted_topics(self) -> dict[uuid.UUID, str]:
        """Id → name of topics of the base image that are gone. A name deleted and re-created
        in the same delta appears here (old id) and in `changed_topics()` (new id)."""
        if self._replaced is not None:
            return {topic_id: topic.name for topic_id, topic in self._replaced.topics_by_id.items()
                    if self._names.get(topic_id) != topic.name}
        return dict(self._deleted)

    def changed_partitions(self) -> dict[tuple[str, int], PartitionRegistration]:
        """(topic name, partition) → new registration, for partitions created or changed."""
        return {(self._names[topic_id], index): self._partitions[topic_id][index]
                for topic_id, indexes in self._changed.items() if topic_id in self._names
                for index in sorted(indexes)}

    def changed_configs(self) -> frozenset[tuple[int, str]]:
        """(resource type, resource name) of every config resource touched."""
        if self._replaced is not None:
            return frozenset(self._changed_configs | set(self._replaced.configs))
        return frozenset(self._changed_configs)

    def changed_brokers(self) -> frozenset[int]:
        return frozenset(self._changed_brokers)

    # -- freezing

    def apply(self) -> MetadataImage:
        image = self.image
        if self._partitions or self._deleted or self._created:
            by_id: dict[uuid.UUID, TopicImage] = {}
            for topic_id, name in self._names.items():
                partitions = self._partitions.get(topic_id)
                if partitions is None:
                    by_id[topic_id] = image.topics_by_id[topic_id]
                else:
                    by_id[topic_id] = TopicImage(name, topic_id, MappingProxyType(dict(partitions)))
            topics_by_id: Mapping[uuid.UUID, TopicImage] = MappingProxyType(by_id)
            topics: Mapping[str, TopicImage] = MappingProxyType({topic.name: topic for topic in by_id.values()})
        else:
            topics_by_id, topics = image.topics_by_id, image.topics
        configs = image.configs
        if self._configs:
            merged = dict(image.configs)
            for key, values in self._configs.items():
                if values:
                    merged[key] = MappingProxyType(dict(values))
                else:
                    merged.pop(key, None)
            configs = MappingProxyType(merged)
        acls = image.acls if self._acls is None else MappingProxyType(self._acls)
        quotas = image.client_quotas
        if self._quotas:
            merged_quotas = dict(image.client_quotas)
            for entity, quota_values in self._quotas.items():
                if quota_values:
                    merged_quotas[entity] = MappingProxyType(dict(quota_values))
                else:
                    merged_quotas.pop(entity, None)
            quotas = MappingProxyType(merged_quotas)
        return MetadataImage(
            cluster_id=image.cluster_id, acls=acls, client_quotas=quotas, features=MappingProxyType(dict(self._features)),
            brokers=MappingProxyType(dict(self._brokers)), topics=topics, topics_by_id=topics_by_id,
            configs=configs, next_producer_id=self._next_producer_id,
            highest_offset=self._highest_offset, epoch=self._epoch,
            scram_credentials=image.scram_credentials if self._scram is None else MappingProxyType(self._scram))


def merge_partition_change(current: PartitionRegistration, record: PartitionChangeRecord) -> PartitionRegistration:
    """Kafka's `PartitionRegistration.merge`: null/-2/-1 fields keep their current value.

    A leader other than -2 (NO_LEADER_CHANGE), including -1 (no leader), bumps the leader
    epoch; every change bumps the partition epoch. New replicas without directories keep the
    directories of replicas that stay and get UNASSIGNED for new ones.
    """
    replicas = current.replicas if record.replicas is None else tuple(record.replicas)
    if record.directories is not None:
        directories = tuple(record.directories)
    elif record.replicas is None or not current.directories:
        directories = current.directories
    else:
        known = dict(zip(current.replicas, current.directories))
        directories = tuple(known.get(replica, UNASSIGNED_DIRECTORY) for replica in replicas)
    if record.leader == NO_LEADER_CHANGE:
        leader, leader_epoch = current.leader, current.leader_epoch
    else:
        leader, leader_epoch = record.leader, current.leader_epoch + 1
    return PartitionRegistration(
        replicas=replicas,
        isr=current.isr if record.isr is None else tuple(record.isr),
        leader=leader, leader_epoch=leader_epoch, partition_epoch=current.partition_epoch + 1,
        removing_replicas=(current.removing_replicas if record.removing_replicas is None
                           else tuple(record.removing_replicas)),
        adding_replicas=current.adding_replicas if record.adding_replicas is None else tuple(record.adding_replicas),
        directories=directories,
        leader_recovery_state=(current.leader_recovery_state if record.leader_recovery_state == -1
                               else record.leader_recovery_state))


_HANDLERS: dict[type, Callable[[MetadataDelta, Any], None]] = {
    FeatureLevelRecord: MetadataDelta._replay_feature_level,
    RegisterBrokerRecord: MetadataDelta._replay_register_broker,
    UnregisterBrokerRecord: MetadataDelta._replay_unregister_broker,
    FenceBrokerRecord: MetadataDelta._replay_fence_broker,
    UnfenceBrokerRecord: MetadataDelta._replay_unfence_broker,
    BrokerRegistrationChangeRecord: MetadataDelta._replay_broker_registration_change,
    TopicRecord: MetadataDelta._replay_topic,
    PartitionRecord: MetadataDelta._replay_partition,
    PartitionChangeRecord: MetadataDelta._replay_partition_change,
    RemoveTopicRecord: MetadataDelta._replay_remove_topic,
    ConfigRecord: MetadataDelta._replay_config,
    ProducerIdsRecord: MetadataDelta._replay_producer_ids,
    AccessControlEntryRecord: MetadataDelta._replay_access_control_entry,
    RemoveAccessControlEntryRecord: MetadataDelta._replay_remove_access_control_entry,
    ClientQuotaRecord: MetadataDelta._replay_client_quota,
    UserScramCredentialRecord: MetadataDelta._replay_user_scram_credential,
    RemoveUserScramCredentialRecord: MetadataDelta._replay_remove_user_scram_credential,
}
