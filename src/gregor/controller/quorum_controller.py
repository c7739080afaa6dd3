"""The controller's decisions (Kafka's QuorumController), sans-IO.

Each operation validates a request against the latest image and returns a ControllerResult:
the answer plus the metadata records that make it true. It changes nothing itself: the caller
commits the records through raft and the replay publishes a new image, which reaches the
controller through `on_metadata_update` (it is a MetadataPublisher). Replaying the whole log at
start therefore rebuilds the controller's state with everyone else's. Randomness (topic ids,
incarnation ids, placement) comes from the injected rng.
"""

from __future__ import annotations

import base64
import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from gregor.controller import acl_control, client_quota_control, feature_control
from gregor.controller.acl_control import AclCreationResult, AclDeletionResult
from gregor.controller.client_quota_control import QuotaAlteration, QuotaAlterationResult
from gregor.controller.config_control import ConfigurationControl
from gregor.controller.feature_control import FeatureUpdate, FeatureUpdateResult
from gregor.controller.operations import (
    AlterConfigsResource, AlterConfigsResult, BrokerRegistrationReply, ControllerResult, CreatableTopic,
    CreatePartitionsResult, CreateTopicResult, DeleteTopicResult, Endpoint, IncrementalAlterConfigsResource,
    PartitionsIncrease, ProducerIdsBlock,
)
from gregor.controller.placement import place_replicas
from gregor.controller.topic_names import CLUSTER_METADATA_TOPIC, colliding_topic, topic_name_error
from gregor.metadata import features
from gregor.metadata.acls import AclFilter, StandardAcl
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.group_configs import BROKER_GROUP_DEFAULTS, SHARE_BROKER_DEFAULTS, BrokerValue
from gregor.metadata.image import TOPIC_RESOURCE, MetadataImage
from gregor.metadata.listener_configs import validate_dynamic_broker_config
from gregor.metadata.topic_configs import (
    ConfigEntry, describe_topic_config, validate_topic_configs,
)
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    ConfigRecord, FeatureLevelRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord,
    RemoveTopicRecord, TopicRecord, UnfenceBrokerRecord,
)

METADATA_VERSION = features.bootstrap_levels()[features.METADATA_VERSION]
PRODUCER_ID_BLOCK_SIZE = 1000
LONG_MAX = 9223372036854775807
UNASSIGNED_DIRECTORY = uuid.UUID(int=0)
MIGRATING_DIRECTORY = uuid.UUID(int=2)
_RESERVED_UUIDS = 100
# Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: a CreateTopics asking for more partitions
# in all is refused whole with POLICY_VIOLATION, before one is placed (found by fuzzing: one topic of
# 2**31-1 partitions made the controller allocate until the process was killed).
MAX_PARTITIONS_PER_REQUEST = 10_000
_TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


def random_uuid(rng: random.Random) -> uuid.UUID:
    """Kafka's Uuid.randomUuid: never a reserved id (below 100) nor one whose base64 starts with '-'."""
    while True:
        value = uuid.UUID(int=rng.getrandbits(128))
        if value.int >= _RESERVED_UUIDS and not uuid_to_base64(value).startswith("-"):
            return value


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: url-safe base64 of the 16 bytes, unpadded (22 characters)."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def generate_cluster_id(rng: random.Random) -> str:
    """A new cluster id, as `kafka-storage random-uuid` makes it."""
    return uuid_to_base64(random_uuid(rng))


@dataclass(frozen=True)
class ControllerConfig:
    """The controller's share of the broker config.

    `broker_config` is the static broker config (server.properties keys explicitly set), used
    for the effective configs a CreateTopics answer carries; `broker_config_validator` checks
    dynamic BROKER-resource keys (default: the broker synonyms of topic configs and the listeners'
    key and trust stores).
    """

    node_id: int
    default_num_partitions: int = 1
    default_replication_factor: int = 1
    delete_topic_enable: bool = True
    broker_config: Mapping[str, str] = field(default_factory=dict)
    broker_config_validator: Callable[[str, str | None], str | None] = validate_dynamic_broker_config
    #: The node's broker keys that group configs default to and are bounded by.
    group_config_bounds: Mapping[str, BrokerValue] = field(
        default_factory=lambda: {**BROKER_GROUP_DEFAULTS, **SHARE_BROKER_DEFAULTS})
    metadata_version: int = METADATA_VERSION
    #: The records a formatted node's bootstrap.checkpoint holds (`bootstrap_metadata`); empty: the defaults.
    bootstrap_records: tuple[Any, ...] = ()


class QuorumController:
    def __init__(self, config: ControllerConfig, rng: random.Random) -> None:
        self.config = config
        self.rng = rng
        self.image = MetadataImage()
        self.configs = ConfigurationControl(config.broker_config_validator, config.group_config_bounds)

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.image = image

    # -- cluster and brokers

    def bootstrap(self) -> ControllerResult[None]:
        """The records a new cluster starts with (its finalized feature levels, metadata.version
        among them, and any SCRAM credentials): the formatted bootstrap metadata, else this build's
        defaults; none once metadata.version is set."""
        if self.image.metadata_version:
            return ControllerResult(None)
        if self.config.bootstrap_records:
            return ControllerResult(None, self.config.bootstrap_records)
        levels = features.bootstrap_levels(self.config.metadata_version)
        return ControllerResult(None, tuple(FeatureLevelRecord(name=name, feature_level=level)
                                            for name, level in levels.items()))

    def update_features(self, updates: Sequence[FeatureUpdate],
                        validate_only: bool = False) -> ControllerResult[FeatureUpdateResult]:
        """UpdateFeatures: every update or none (`gregor.controller.feature_control`)."""
        return feature_control.update_features(self.image, updates, validate_only, self.config.node_id)

    def register_broker(self, broker_id: int, endpoints: Sequence[Endpoint], rack: str | None = None,
                        incarnation_id: uuid.UUID | None = None,
                        log_dirs: Sequence[uuid.UUID] = (), unfence: bool = True,
                        next_offset: int | None = None,
                        supported_features: Mapping[str, tuple[int, int]] | None = None,
                        ) -> ControllerResult[BrokerRegistrationReply]:
        """Register (or re-register after a restart) a broker, unfenced at once when `unfence`.

        Kafka registers a broker fenced and unfences it once it has caught up with the metadata
        log (its heartbeats say so: `gregor.controller.broker_heartbeats`); a broker embedded with
        its controller has caught up by construction, so both records go in one commit. The
        broker epoch is the offset the registration is written at (`next_offset`, the log end,
        when the caller knows it), and grows with every registration.
        A broker that cannot honour a finalized feature level is refused (UNSUPPORTED_VERSION, as
        Kafka's controller answers); `supported_features` defaults to this build's ranges.
        """
        if not self.image.metadata_version:
            return ControllerResult(BrokerRegistrationReply(
                ErrorCode.BROKER_ID_NOT_REGISTERED, "the cluster has no metadata.version yet: bootstrap it first"))
        ranges = supported_features if supported_features is not None else \
            {f.name: (f.min_level, f.max_level) for f in features.SUPPORTED_FEATURES}
        problems = features.unsupported_levels(self.image.features, ranges)
        if problems:
            return ControllerResult(BrokerRegistrationReply(
                ErrorCode.UNSUPPORTED_VERSION,
                f"broker {broker_id} cannot honour the cluster's finalized features: {', '.join(problems)}"))
        previous = self.image.brokers.get(broker_id)
        offset = self.image.highest_offset + 1 if next_offset is None else next_offset
        epoch = max(offset, previous.epoch + 1 if previous else 0)
        register = RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=incarnation_id or random_uuid(self.rng), broker_epoch=epoch,
            end_points=[RegisterBrokerRecord.BrokerEndpoint(name=e.listener, host=e.host, port=e.port,
                                                            security_protocol=e.security_protocol)
                        for e in endpoints],
            features=[RegisterBrokerRecord.BrokerFeature(name=name, min_supported_version=low,
                                                         max_supported_version=high)
                      for name, (low, high) in sorted(ranges.items())],
            rack=rack, fenced=True, log_dirs=list(log_dirs))
        records = (register, UnfenceBrokerRecord(id=broker_id, epoch=epoch)) if unfence else (register,)
        return ControllerResult(BrokerRegistrationReply(broker_epoch=epoch), records)

    def _default_directory(self, broker_id: int) -> uuid.UUID:
        registration = self.image.brokers.get(broker_id)
        if registration is None or not registration.log_dirs:
            return MIGRATING_DIRECTORY
        return registration.log_dirs[0] if len(registration.log_dirs) == 1 else UNASSIGNED_DIRECTORY

    def _partition_record(self, topic_id: uuid.UUID, partition: int, replicas: Sequence[int]) -> PartitionRecord:
        unfenced = set(self.image.unfenced_brokers())
        isr = [r for r in replicas if r in unfenced]
        return PartitionRecord(partition_id=partition, topic_id=topic_id, replicas=list(replicas), isr=isr,
                               removing_replicas=[], adding_replicas=[], leader=isr[0] if isr else -1,
                               leader_epoch=0, partition_epoch=0,
                               directories=[self._default_directory(r) for r in replicas])

    # -- topics

    def _check_assignment(self, partition: int, replicas: Sequence[int]) -> str | None:
        if not replicas:
            return f"The manual partition assignment includes an empty replica list for partition {partition}."
        if len(set(replicas)) != len(replicas):
            return f"The manual partition assignment includes duplicate replicas for partition {partition}."
        for replica in replicas:
            if replica not in self.image.brokers:
                return (f"The manual partition assignment includes broker {replica}, "
                        "but no such broker is registered.")
        if not set(replicas) & set(self.image.unfenced_brokers()):
            return (f"All brokers specified in the manual partition assignment for partition {partition} "
                    "are fenced or in controlled shutdown.")
        return None

    def _plan_topic(self, topic: CreatableTopic) -> tuple[dict[int, list[int]], CreateTopicResult | None]:
        def fail(code: ErrorCode, message: str) -> tuple[dict[int, list[int]], CreateTopicResult]:
            return {}, CreateTopicResult(topic.name, code, message)

        if topic.assignments:
            if topic.num_partitions != -1:
                return fail(ErrorCode.INVALID_REQUEST,
                            "A manual partition assignment was specified, but numPartitions was not set to -1.")
            if topic.replication_factor != -1:
                return fail(ErrorCode.INVALID_REQUEST,
                            "A manual partition assignment was specified, but replicationFactor was not set to -1.")
            if sorted(topic.assignments) != list(range(len(topic.assignments))):
                return fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            "Partitions in the manual partition assignment must be numbered 0 to N-1.")
            placement = {p: list(r) for p, r in sorted(topic.assignments.items())}
            sizes = {len(r) for r in placement.values()}
            if len(sizes) > 1:
                return fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            "All partitions in the manual partition assignment must have the same number of replicas.")
            for partition, replicas in placement.items():
                reason = self._check_assignment(partition, replicas)
                if reason:
                    return fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, reason)
            return placement, None
        partitions = self.config.default_num_partitions if topic.num_partitions == -1 else topic.num_partitions
        factor = self.config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
        if partitions <= 0:
            return fail(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
        if factor <= 0:
            return fail(ErrorCode.INVALID_REPLICATION_FACTOR,
                        "Replication factor must be larger than 0, or -1 to use the default value.")
        brokers = self.image.unfenced_brokers()
        if factor > len(brokers):
            return fail(ErrorCode.INVALID_REPLICATION_FACTOR,
                        f"Unable to replicate the partition {factor} time(s): The target replication factor of "
                        f"{factor} cannot be reached because only {len(brokers)} broker(s) are registered.")
        return place_replicas(brokers, range(partitions), factor, self.rng, self._racks(brokers)), None

    def _racks(self, brokers: Sequence[int]) -> dict[int, str | None]:
        return {broker: self.image.brokers[broker].rack for broker in brokers}

    def _effective_configs(self, overrides: Mapping[str, str]) -> tuple[ConfigEntry, ...]:
        return tuple(describe_topic_config(overrides, self.config.broker_config,
                                           self.image.broker_config(self.config.node_id),
                                           self.image.broker_config("")))

    def create_topics(self, topics: Sequence[CreatableTopic],
                      validate_only: bool = False) -> ControllerResult[list[CreateTopicResult]]:
        """CreateTopics: one result per requested topic, in request order."""
        requested = sum(len(topic.assignments) if topic.assignments else
                        self.config.default_num_partitions if topic.num_partitions == -1 else
                        max(topic.num_partitions, 0) for topic in topics)
        if requested > MAX_PARTITIONS_PER_REQUEST:
            return ControllerResult([CreateTopicResult(topic.name, ErrorCode.POLICY_VIOLATION, _TOO_MANY_PARTITIONS)
                                     for topic in topics], ())
        names = [topic.name for topic in topics]
        duplicates = {name for name in names if names.count(name) > 1}
        taken = set(self.image.topics)
        results: list[CreateTopicResult] = []
        records: list[Any] = []
        for topic in topics:
            result, topic_records = self._create_topic(topic, duplicates, taken)
            results.append(result)
            if not result.error:
                taken.add(topic.name)
                if not validate_only:
                    records.extend(topic_records)
        return ControllerResult(results, tuple(records))

    def _create_topic(self, topic: CreatableTopic, duplicates: set[str],
                      taken: set[str]) -> tuple[CreateTopicResult, list[Any]]:
        name = topic.name
        if name in duplicates:
            return CreateTopicResult(name, ErrorCode.INVALID_REQUEST, f"Duplicate topic name {name}."), []
        if name == CLUSTER_METADATA_TOPIC:  # as Kafka's ControllerApis: its partition directory is the metadata log's
            return CreateTopicResult(name, ErrorCode.INVALID_REQUEST,
                                     f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."), []
        reason = topic_name_error(name)
        if reason:
            return CreateTopicResult(name, ErrorCode.INVALID_TOPIC_EXCEPTION, reason), []
        if name in taken:
            return CreateTopicResult(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."), []
        collision = colliding_topic(name, taken)
        if collision:
            return CreateTopicResult(name, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                     f"Topic '{name}' collides with existing topic: {collision}"), []
        nulls = sorted(key for key, value in topic.configs.items() if value is None)
        if nulls:
            return CreateTopicResult(name, ErrorCode.INVALID_CONFIG,
                                     f"Null value not supported for topic configs: {', '.join(nulls)}"), []
        overrides = {key: value for key, value in topic.configs.items() if value is not None}
        reason = validate_topic_configs(overrides)
        if reason:
            return CreateTopicResult(name, ErrorCode.INVALID_CONFIG, reason), []
        placement, failure = self._plan_topic(topic)
        if failure is not None:
            return failure, []
        topic_id = random_uuid(self.rng)
        records: list[Any] = [TopicRecord(name=name, topic_id=topic_id)]
        records.extend(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=name, name=key, value=value)
                       for key, value in sorted(overrides.items()))
        records.extend(self._partition_record(topic_id, p, r) for p, r in placement.items())
        return CreateTopicResult(name, topic_id=topic_id, num_partitions=len(placement),
                                 replication_factor=len(placement[0]),
                                 configs=self._effective_configs(overrides)), records

    def delete_topics(self, names: Iterable[str] = (),
                      topic_ids: Iterable[uuid.UUID] = ()) -> ControllerResult[list[DeleteTopicResult]]:
        """DeleteTopics by name and/or id: one result per entry, names first, in request order."""
        results: list[DeleteTopicResult] = []
        doomed: dict[uuid.UUID, None] = {}
        for name in names:
            topic = self.image.topics.get(name)
            if topic is None:
                results.append(DeleteTopicResult(name, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                 message="This server does not host this topic-partition."))
            else:
                results.append(self._delete(topic.name, topic.topic_id, doomed))
        for topic_id in topic_ids:
            topic = self.image.topics_by_id.get(topic_id)
            if topic is None:
                results.append(DeleteTopicResult(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID,
                                                 "This server does not host this topic ID."))
            else:
                results.append(self._delete(topic.name, topic_id, doomed))
        return ControllerResult(results, tuple(RemoveTopicRecord(topic_id=t) for t in doomed))

    def _delete(self, name: str, topic_id: uuid.UUID, doomed: dict[uuid.UUID, None]) -> DeleteTopicResult:
        if not self.config.delete_topic_enable:
            return DeleteTopicResult(name, topic_id, ErrorCode.TOPIC_DELETION_DISABLED,
                                     "Topic deletion is disabled.")
        doomed[topic_id] = None
        return DeleteTopicResult(name, topic_id)

    def create_partitions(self, topics: Sequence[PartitionsIncrease],
                          validate_only: bool = False) -> ControllerResult[list[CreatePartitionsResult]]:
        """CreatePartitions; more than MAX_PARTITIONS_PER_REQUEST new partitions in all are refused as
        CreateTopics refuses them (Kafka bounds the records of one operation likewise)."""
        added = 0
        for increase in topics:
            topic = self.image.topics.get(increase.name)
            added += max(increase.count - (len(topic.partitions) if topic else 0), 0)
        if added > MAX_PARTITIONS_PER_REQUEST:
            return ControllerResult([CreatePartitionsResult(increase.name, ErrorCode.POLICY_VIOLATION,
                                                            _TOO_MANY_PARTITIONS) for increase in topics], ())
        results: list[CreatePartitionsResult] = []
        records: list[Any] = []
        for increase in topics:
            result, topic_records = self._create_partitions(increase)
            results.append(result)
            if not result.error and not validate_only:
                records.extend(topic_records)
        return ControllerResult(results, tuple(records))

    def _create_partitions(self, increase: PartitionsIncrease) -> tuple[CreatePartitionsResult, list[Any]]:
        name = increase.name

        def fail(code: ErrorCode, message: str) -> tuple[CreatePartitionsResult, list[Any]]:
            return CreatePartitionsResult(name, code, message), []

        topic = self.image.topics.get(name)
        if topic is None:
            return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")
        current = len(topic.partitions)
        if increase.count < current:
            return fail(ErrorCode.INVALID_PARTITIONS,
                        f"The topic {name} currently has {current} partition(s); {increase.count} would not be an "
                        "increase.")
        if increase.count == current:
            return fail(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        new = range(current, increase.count)
        factor = topic.replication_factor
        if increase.assignments is not None:
            if len(increase.assignments) != len(new):
                return fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"Attempted to add {len(new)} additional partition(s), but only "
                            f"{len(increase.assignments)} assignment(s) were specified.")
            placement = {}
            for partition, replicas in zip(new, increase.assignments):
                if len(replicas) != factor:
                    return fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"The manual partition assignment includes a partition with {len(replicas)} "
                                f"replica(s), but this is not consistent with previous partitions, which have "
                                f"{factor} replica(s).")
                reason = self._check_assignment(partition, replicas)
                if reason:
                    return fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, reason)
                placement[partition] = list(replicas)
        else:
            brokers = self.image.unfenced_brokers()
            if factor > len(brokers):
                return fail(ErrorCode.INVALID_REPLICATION_FACTOR,
                            f"Unable to replicate the partition {factor} time(s): The target replication factor "
                            f"of {factor} cannot be reached because only {len(brokers)} broker(s) are registered.")
            placement = place_replicas(brokers, new, factor, self.rng, self._racks(brokers))
        return (CreatePartitionsResult(name),
                [self._partition_record(topic.topic_id, p, r) for p, r in placement.items()])

    # -- configs

    def alter_configs(self, resources: Sequence[AlterConfigsResource],
                      validate_only: bool = False) -> ControllerResult[list[AlterConfigsResult]]:
        """AlterConfigs: each resource's config set becomes exactly the given one."""
        return self._configs_result([self.configs.alter(self.image, r.resource_type, r.resource_name, r.configs)
                                     for r in resources], validate_only)

    def incremental_alter_configs(self, resources: Sequence[IncrementalAlterConfigsResource],
                                  validate_only: bool = False) -> ControllerResult[list[AlterConfigsResult]]:
        return self._configs_result([self.configs.incremental_alter(self.image, r.resource_type, r.resource_name,
                                                                    list(r.ops)) for r in resources], validate_only)

    @staticmethod
    def _configs_result(outcomes: list[ControllerResult[AlterConfigsResult]],
                        validate_only: bool) -> ControllerResult[list[AlterConfigsResult]]:
        records = () if validate_only else tuple(r for outcome in outcomes for r in outcome.records)
        return ControllerResult([outcome.response for outcome in outcomes], records)

    # -- ACLs and client quotas

    def create_acls(self, acls: Sequence[StandardAcl]) -> ControllerResult[list[AclCreationResult]]:
        return acl_control.create_acls(self.image, acls, self.rng)

    def delete_acls(self, filters: Sequence[AclFilter]) -> ControllerResult[list[AclDeletionResult]]:
        return acl_control.delete_acls(self.image, filters)

    def alter_client_quotas(self, alterations: Sequence[QuotaAlteration],
                            validate_only: bool = False) -> ControllerResult[list[QuotaAlterationResult]]:
        return client_quota_control.alter_client_quotas(self.image, alterations, validate_only)

    # -- producer ids

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> ControllerResult[ProducerIdsBlock]:
        """AllocateProducerIds: the next block of 1000 ids for a registered broker."""
        registration = self.image.brokers.get(broker_id)
        if registration is None:
            return ControllerResult(ProducerIdsBlock(ErrorCode.BROKER_ID_NOT_REGISTERED,
                                                     f"Broker {broker_id} is not registered."))
        if registration.epoch != broker_epoch:
            return ControllerResult(ProducerIdsBlock(
                ErrorCode.STALE_BROKER_EPOCH,
                f"Expected broker epoch {registration.epoch}, but got broker epoch {broker_epoch}."))
        first = self.image.next_producer_id
        if first > LONG_MAX - PRODUCER_ID_BLOCK_SIZE:
            return ControllerResult(ProducerIdsBlock(ErrorCode.UNKNOWN_SERVER_ERROR, "Exhausted all producerIds."))
        record = ProducerIdsRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                   next_producer_id=first + PRODUCER_ID_BLOCK_SIZE)
        return ControllerResult(ProducerIdsBlock(broker_id=broker_id, first_producer_id=first,
                                                 size=PRODUCER_ID_BLOCK_SIZE), (record,))
