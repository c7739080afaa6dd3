"""AdminClient: topics, partitions, configs, consumer groups and offsets of any Kafka cluster.

Synchronous methods over the client's network thread (`gregor.client.network`). Each takes an
optional `timeout` in seconds (default `default.api.timeout.ms`) that bounds the whole call,
retries included: retriable errors (Kafka's retriable set, lost connections, request
timeouts) are retried with `retry.backoff.ms` backoff until the timeout or `retries` runs out,
after refreshing metadata or the coordinator when the error says they moved. A topic that does
not exist is an answer, not a transient state: UNKNOWN_TOPIC_OR_PARTITION is reported at once.

Results are plain dataclasses. Operations on many items (topics, resources, groups,
partitions) return a dict from each item to its result, where a failed item maps to the
KafkaException saying why instead, so one bad item does not hide the others (an operation
that returns nothing for an item maps it to None on success). A failure of the operation as a whole (no broker reachable, an API the
broker does not support, the timeout) raises KafkaException.

Routing: topic creation, deletion and partition changes go to the controller named in the
metadata (any broker forwards them in KRaft clusters); configs of a broker to that broker,
other configs and cluster questions to the least loaded broker (with `bootstrap.controllers`,
KIP-919: the nodes are the controllers, learned with DescribeCluster; config changes go to the
active controller, a broker resource's description to that controller); group requests to the group's
coordinator (FindCoordinator, batched when the broker speaks v4); DeleteRecords and ListOffsets
to each partition's leader; ListGroups to every broker.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence, TypeVar

from gregor.client import admin_security, features
from gregor.client.acls import AclBinding, AclBindingFilter, QuotaAlteration, QuotaEntity
from gregor.client.config import Role, parse_config
from gregor.client.share_groups import ShareGroupDescription, ShareGroupListing, share_group_description
from gregor.client.features import FeatureMetadata, FeatureUpdate
from gregor.client.errors import (
    ClientErrorCode, KafkaConnectionError, KafkaException, KafkaTimeoutError, error_for,
)
from gregor.client.network import controllers
from gregor.client.network import (
    COORDINATOR_MOVED_ERRORS, ByPartition, Coordinators, CoordinatorType, NetworkClient, NetworkSettings,
    NetworkThread, Node, PartitionMetadata, TopicPartition,
)
from gregor.client.scram_credentials import (
    ScramCredentialInfo, UserScramCredentialDeletion, UserScramCredentialUpsertion, mechanism_name,
)
from gregor.client.transactions import TransactionDescription, TransactionListing
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.messages import (
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
    AlterConfigsRequest, ApiKey, ConsumerGroupDescribeRequest, ConsumerProtocolAssignment, CreatePartitionsRequest,
    CreateTopicsRequest,
    AlterPartitionReassignmentsRequest, DeleteGroupsRequest, DeleteRecordsRequest, DeleteTopicsRequest,
    DescribeClusterRequest, DescribeConfigsRequest, DescribeGroupsRequest, DescribeLogDirsRequest,
    DescribeQuorumRequest, DescribeTransactionsRequest, ElectLeadersRequest, IncrementalAlterConfigsRequest,
    ListGroupsRequest, ListOffsetsRequest, ListPartitionReassignmentsRequest, ListTransactionsRequest,
    OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, ShareGroupDescribeRequest,
)
from gregor.protocol.messages import (
    AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequest,
)
from gregor.protocol.primitives import ZERO_UUID, Reader

METADATA_TOPIC = "__cluster_metadata"

_GRACE_SECONDS = 2.0
_CLIENT_NUMBERS = itertools.count(1)
_NOT_RETRIED = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID})
_MISSING = object()
K = TypeVar("K")
T = TypeVar("T")


# ---- what callers pass in ----

class ResourceType(enum.IntEnum):
    """Kinds of config resources (Kafka's ConfigResource.Type)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(enum.IntEnum):
    """Where a config value comes from (DescribeConfigs' config_source)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class AlterConfigOpType(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class ElectionType(enum.IntEnum):
    """Which leader `elect_leaders` asks for (Kafka's ElectionType)."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class ConfigResource:
    """A topic, broker (name = node id), broker logger or group whose configs are meant."""

    type: ResourceType
    name: str

    def __post_init__(self) -> None:
        kind = self.type
        if isinstance(kind, str):
            try:
                kind = ResourceType[kind.upper()]
            except KeyError:
                raise ValueError(f"unknown config resource type {self.type!r}") from None
        object.__setattr__(self, "type", ResourceType(kind))
        object.__setattr__(self, "name", str(self.name))


@dataclass(frozen=True)
class NewTopic:
    """A topic to create; -1 leaves partitions and replication to the broker's defaults.

    `replica_assignment[i]` lists the broker ids of partition i (then leave the counts at -1).
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: Sequence[Sequence[int]] | None = None
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AlterConfigOp:
    """One change of `incremental_alter_configs`."""

    name: str
    value: str | None
    op: AlterConfigOpType = AlterConfigOpType.SET


@dataclass(frozen=True)
class OffsetSpec:
    """Which offset `list_offsets` looks up: a timestamp (ms) or one of Kafka's special values."""

    timestamp: int

    LATEST_TIMESTAMP = -1
    EARLIEST_TIMESTAMP = -2
    MAX_TIMESTAMP = -3

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(cls.EARLIEST_TIMESTAMP)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(cls.LATEST_TIMESTAMP)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        """The offset of the record with the highest timestamp (needs ListOffsets v7)."""
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        """The first offset whose timestamp is at or after `timestamp_ms`."""
        if timestamp_ms < 0:
            raise ValueError("a timestamp must not be negative")
        return cls(timestamp_ms)


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset; -1 when the group has none for the partition."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


# ---- what comes back ----

@dataclass(frozen=True)
class CreatedTopic:
    """What the broker created (counts and configs need CreateTopics v5, the id v7; else -1/{}/None)."""

    name: str
    topic_id: uuid.UUID | None
    num_partitions: int
    replication_factor: int
    config: dict[str, str | None]


@dataclass(frozen=True)
class TopicListing:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: list[PartitionMetadata]


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    is_read_only: bool
    is_default: bool
    is_sensitive: bool
    synonyms: list[ConfigSynonym] = field(default_factory=list)


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str | None
    controller: Node | None
    nodes: list[Node]


@dataclass(frozen=True)
class QuorumReplica:
    """One voter or observer of the metadata quorum, as its leader sees it (-1: unknown)."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1


@dataclass(frozen=True)
class QuorumInfo:
    """Java's QuorumInfo: the metadata quorum's leader, epoch, high watermark and replicas."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[QuorumReplica]
    observers: list[QuorumReplica]


@dataclass(frozen=True)
class ConsumerGroupListing:
    group_id: str
    protocol_type: str
    state: str | None
    """None when the broker's ListGroups version (< v4) does not say."""
    group_type: str = "classic"
    """"consumer" for a KIP-848 group (ListGroups v5+ says; older brokers only have "classic")."""


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartition] | None
    """Decoded from the consumer protocol; None when the group does not use it."""
    member_epoch: int | None = None
    """A KIP-848 member's epoch; None in a classic group."""
    target_assignment: list[TopicPartition] | None = None
    """What the broker's assignor wants the KIP-848 member to own; None in a classic group."""


@dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription]
    coordinator: Node | None
    group_type: str = "classic"
    """"consumer" for a KIP-848 group, described by ConsumerGroupDescribe."""
    group_epoch: int | None = None
    assignment_epoch: int | None = None


@dataclass(frozen=True)
class DeletedRecords:
    low_watermark: int


@dataclass(frozen=True)
class PartitionReassignment:
    """A running reassignment: the replicas now (old and new), those being added and removed."""

    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


@dataclass(frozen=True)
class ReplicaInfo:
    """One replica in a log dir: its bytes on disk and how far its log end is behind (Kafka's)."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir of a broker; `error` set when the broker could not read it (then no replicas).
    The byte totals are None when the broker's DescribeLogDirs version (< v4) does not say."""

    error: KafkaException | None
    replica_infos: dict[TopicPartition, ReplicaInfo]
    total_bytes: int | None
    usable_bytes: int | None


@dataclass(frozen=True)
class ListedOffset:
    offset: int
    timestamp: int
    leader_epoch: int | None


# ---- the client ----

class AdminClient:
    """Administrative operations against any Kafka-compatible cluster (see the module doc)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Kafka's admin keys in `config` and/or as keyword arguments with underscores
        (`bootstrap_servers=`); an unknown key raises ConfigError (a ValueError) naming it."""
        parsed = parse_config(Role.ADMIN, config, **kwargs)
        client_id = parsed["client.id"] or f"adminclient-{next(_CLIENT_NUMBERS)}"
        settings = NetworkSettings.from_config({**parsed, "client.id": client_id})
        self._default_timeout = parsed["default.api.timeout.ms"] / 1000
        self._thread = NetworkThread(name=f"gregor-{client_id}")
        self._network = NetworkClient(settings)
        self._operations = AdminOperations(self._network, parsed["retries"])
        self._thread.run(self._start(), self._default_timeout + _GRACE_SECONDS)

    async def _start(self) -> None:
        self._network.start()

    def close(self, timeout: float | None = None) -> None:
        """Close connections and stop the network thread; pending calls fail with `_DESTROY`."""
        try:
            self._thread.run(self._network.close(), timeout)
        except KafkaException:
            pass
        self._thread.close(timeout)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _call(self, operation: Callable[[float], Awaitable[T]], timeout: float | None) -> T:
        seconds = self._default_timeout if timeout is None else timeout

        async def bounded() -> T:
            return await operation(asyncio.get_running_loop().time() + seconds)

        return self._thread.run(bounded(), seconds + _GRACE_SECONDS)

    # topics

    def create_topics(self, new_topics: Iterable[NewTopic], validate_only: bool = False,
                      timeout: float | None = None) -> dict[str, CreatedTopic | KafkaException]:
        """Create topics (or with `validate_only` only check that they could be created)."""
        topics = list(new_topics)
        refuse_duplicates(topic.name for topic in topics)
        return self._call(lambda deadline: self._operations.create_topics(topics, validate_only, deadline), timeout)

    def delete_topics(self, topics: Iterable[str], timeout: float | None = None) -> dict[str, KafkaException | None]:
        names = list(topics)
        return self._call(lambda deadline: self._operations.delete_topics(names, deadline), timeout)

    def list_topics(self, internal: bool = False, timeout: float | None = None) -> dict[str, TopicListing]:
        """Every topic of the cluster by name; internal topics only when asked for."""
        return self._call(lambda deadline: self._operations.list_topics(internal, deadline), timeout)

    def describe_topics(self, topics: Iterable[str], timeout: float | None = None,
                        ) -> dict[str, TopicDescription | KafkaException]:
        names = list(topics)
        return self._call(lambda deadline: self._operations.describe_topics(names, deadline), timeout)

    def create_partitions(self, new_totals: Mapping[str, int], validate_only: bool = False,
                          timeout: float | None = None) -> dict[str, KafkaException | None]:
        """Grow each topic to the given total number of partitions."""
        totals = dict(new_totals)
        return self._call(lambda deadline: self._operations.create_partitions(totals, validate_only, deadline),
                          timeout)

    # configs

    def describe_configs(self, resources: Iterable[ConfigResource], include_synonyms: bool = False,
                         timeout: float | None = None,
                         ) -> dict[ConfigResource, dict[str, ConfigEntry] | KafkaException]:
        wanted = list(dict.fromkeys(resources))
        return self._call(lambda deadline: self._operations.describe_configs(wanted, include_synonyms, deadline),
                          timeout)

    def alter_configs(self, configs: Mapping[ConfigResource, Mapping[str, str | None]], validate_only: bool = False,
                      timeout: float | None = None) -> dict[ConfigResource, KafkaException | None]:
        """Replace the whole dynamic config of each resource (Kafka's legacy AlterConfigs)."""
        changes = {resource: dict(values) for resource, values in configs.items()}
        return self._call(lambda deadline: self._operations.alter_configs(changes, validate_only, deadline), timeout)

    def incremental_alter_configs(self, changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
                                  validate_only: bool = False, timeout: float | None = None,
                                  ) -> dict[ConfigResource, KafkaException | None]:
        """Set, delete, append to or subtract from single config keys of each resource."""
        operations = {resource: list(ops) for resource, ops in changes.items()}
        return self._call(
            lambda deadline: self._operations.incremental_alter_configs(operations, validate_only, deadline), timeout)

    # cluster

    def describe_cluster(self, timeout: float | None = None) -> ClusterDescription:
        return self._call(self._operations.describe_cluster, timeout)

    def describe_metadata_quorum(self, timeout: float | None = None) -> QuorumInfo:
        """The KRaft metadata quorum (DescribeQuorum), as `kafka-metadata-quorum.sh describe` shows it."""
        return self._call(self._operations.describe_metadata_quorum, timeout)

    def describe_features(self, timeout: float | None = None) -> FeatureMetadata:
        """The features a broker supports and the levels the cluster finalized (ApiVersions v3+)."""
        return self._call(lambda deadline: features.describe_features(self._operations, deadline), timeout)

    def update_features(self, updates: Mapping[str, FeatureUpdate], validate_only: bool = False,
                        timeout: float | None = None) -> dict[str, KafkaException | None]:
        """Finalize features at new levels, all or none (UpdateFeatures); each feature's outcome."""
        wanted = dict(updates)
        return self._call(lambda deadline: features.update_features(self._operations, wanted, validate_only,
                                                                    deadline), timeout)

    # ACLs and client quotas

    def create_acls(self, acls: Iterable[AclBinding],
                    timeout: float | None = None) -> dict[AclBinding, KafkaException | None]:
        bindings = list(dict.fromkeys(acls))
        return self._call(lambda deadline: admin_security.create_acls(self._operations, bindings, deadline), timeout)

    def describe_acls(self, acl_filter: AclBindingFilter, timeout: float | None = None) -> list[AclBinding]:
        return self._call(lambda deadline: admin_security.describe_acls(self._operations, acl_filter, deadline),
                          timeout)

    def delete_acls(self, filters: Iterable[AclBindingFilter], timeout: float | None = None,
                    ) -> dict[AclBindingFilter, list[AclBinding] | KafkaException]:
        """The ACLs each filter removed (an ACL matched by several is reported by the first)."""
        wanted = list(dict.fromkeys(filters))
        return self._call(lambda deadline: admin_security.delete_acls(self._operations, wanted, deadline), timeout)

    def alter_client_quotas(self, alterations: Iterable[QuotaAlteration], validate_only: bool = False,
                            timeout: float | None = None) -> list[KafkaException | None]:
        """Each alteration's outcome, in order (None: done)."""
        changes = list(alterations)
        return self._call(lambda deadline: admin_security.alter_client_quotas(self._operations, changes,
                                                                              validate_only, deadline), timeout)

    def describe_client_quotas(self, components: Iterable[tuple[str, int, str | None]] = (), strict: bool = False,
                               timeout: float | None = None) -> list[tuple[QuotaEntity, dict[str, float]]]:
        """Quota values by entity; `components` filter as (entity type, match type, name)."""
        wanted = list(components)
        return self._call(lambda deadline: admin_security.describe_client_quotas(self._operations, wanted, strict,
                                                                                 deadline), timeout)

    # users

    def alter_user_scram_credentials(
            self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion],
            timeout: float | None = None) -> dict[str, KafkaException | None]:
        """Set or delete SCRAM credentials; each user's outcome (None: done)."""
        changes = list(alterations)
        return self._call(lambda deadline: self._operations.alter_user_scram_credentials(changes, deadline), timeout)

    def describe_user_scram_credentials(self, users: Iterable[str] | None = None, timeout: float | None = None
                                        ) -> dict[str, list[ScramCredentialInfo] | KafkaException]:
        """The mechanisms and iterations of users' credentials (every user's when `users` is None)."""
        names = None if users is None else list(users)
        return self._call(lambda deadline: self._operations.describe_user_scram_credentials(names, deadline), timeout)

    # consumer groups and their offsets

    def list_consumer_groups(self, states: Iterable[str] | None = None,
                             timeout: float | None = None) -> list[ConsumerGroupListing]:
        """Groups of the consumer protocol (or of none yet) on every broker; `states` filters
        by state name (e.g. "Stable", "Empty"; needs ListGroups v4)."""
        wanted = list(states) if states is not None else None
        return self._call(lambda deadline: self._operations.list_consumer_groups(wanted, deadline), timeout)

    def describe_consumer_groups(self, group_ids: Iterable[str], timeout: float | None = None,
                                 ) -> dict[str, ConsumerGroupDescription | KafkaException]:
        groups = list(group_ids)
        return self._call(lambda deadline: self._operations.describe_consumer_groups(groups, deadline), timeout)

    def list_transactions(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                          duration_ms: int = -1, timeout: float | None = None) -> list[TransactionListing]:
        """The transactions every broker coordinates, filtered by state name, producer id and
        (`duration_ms`, ListTransactions v1) how long they have been running."""
        wanted, pids = list(states), list(producer_ids)
        return self._call(lambda deadline: self._operations.list_transactions(wanted, pids, duration_ms, deadline),
                          timeout)

    def describe_transactions(self, transactional_ids: Iterable[str], timeout: float | None = None,
                              ) -> dict[str, TransactionDescription | KafkaException]:
        ids = list(transactional_ids)
        return self._call(lambda deadline: self._operations.describe_transactions(ids, deadline), timeout)

    def delete_consumer_groups(self, group_ids: Iterable[str], timeout: float | None = None,
                               ) -> dict[str, KafkaException | None]:
        groups = list(group_ids)
        return self._call(lambda deadline: self._operations.delete_consumer_groups(groups, deadline), timeout)

    # share groups (KIP-932)

    def list_share_groups(self, timeout: float | None = None) -> list[ShareGroupListing]:
        """The share groups of every broker (ListGroups v5 with the type filter "share")."""
        return self._call(self._operations.list_share_groups, timeout)

    def describe_share_groups(self, group_ids: Iterable[str], timeout: float | None = None,
                              ) -> dict[str, ShareGroupDescription | KafkaException]:
        """Members, epochs and assignments of share groups (ShareGroupDescribe)."""
        groups = list(group_ids)
        return self._call(lambda deadline: self._operations.describe_share_groups(groups, deadline), timeout)

    def list_share_group_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None,
                                 timeout: float | None = None) -> dict[TopicPartition, int | None | KafkaException]:
        """A share group's start offset on `partitions` (None: every partition it has state on;
        None as a value: no state there) with DescribeShareGroupOffsets; a group error is raised."""
        wanted = _partitions_by_topic(partitions) if partitions is not None else None
        return self._call(lambda deadline: self._operations.share_group_offsets(
            group_id, lambda node: self._operations.describe_share_offsets(group_id, wanted, node, deadline),
            deadline), timeout)

    def alter_share_group_offsets(self, group_id: str, offsets: Mapping[tuple[str, int], int],
                                  timeout: float | None = None) -> dict[TopicPartition, KafkaException | None]:
        """Set an empty share group's start offsets (AlterShareGroupOffsets); each partition's
        outcome, a group error (NON_EMPTY_GROUP, ...) raised."""
        by_topic: dict[str, dict[int, int]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, {})[partition] = offset
        return self._call(lambda deadline: self._operations.share_group_offsets(
            group_id, lambda node: self._operations.alter_share_offsets(group_id, by_topic, node, deadline),
            deadline), timeout)

    def delete_share_group_offsets(self, group_id: str, topics: Iterable[str],
                                   timeout: float | None = None) -> dict[str, KafkaException | None]:
        """Forget an empty share group's state on whole topics (DeleteShareGroupOffsets); each
        topic's outcome, a group error raised."""
        names = list(topics)
        return self._call(lambda deadline: self._operations.share_group_offsets(
            group_id, lambda node: self._operations.delete_share_offsets(group_id, names, node, deadline),
            deadline), timeout)

    def delete_share_groups(self, group_ids: Iterable[str], timeout: float | None = None,
                            ) -> dict[str, KafkaException | None]:
        """Delete empty share groups and their state (DeleteGroups)."""
        return self.delete_consumer_groups(group_ids, timeout)

    def list_consumer_group_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None,
                                    require_stable: bool = False, timeout: float | None = None,
                                    ) -> dict[TopicPartition, OffsetAndMetadata | KafkaException]:
        """Committed offsets of a group, for `partitions` or (None) every partition it committed."""
        wanted = [TopicPartition(*tp) for tp in partitions] if partitions is not None else None
        return self._call(
            lambda deadline: self._operations.list_group_offsets(group_id, wanted, require_stable, deadline), timeout)

    def alter_consumer_group_offsets(self, group_id: str,
                                     offsets: ByPartition[int | OffsetAndMetadata],
                                     timeout: float | None = None,
                                     ) -> dict[TopicPartition, KafkaException | None]:
        """Commit offsets for a group that has no active members (OffsetCommit, generation -1)."""
        commits = {TopicPartition(*tp): value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
                   for tp, value in offsets.items()}
        return self._call(lambda deadline: self._operations.alter_group_offsets(group_id, commits, deadline), timeout)

    def delete_consumer_group_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]],
                                      timeout: float | None = None) -> dict[TopicPartition, KafkaException | None]:
        wanted = [TopicPartition(*tp) for tp in partitions]
        return self._call(lambda deadline: self._operations.delete_group_offsets(group_id, wanted, deadline), timeout)

    # records and offsets of partitions

    def delete_records(self, before_offsets: ByPartition[int], timeout: float | None = None,
                       ) -> dict[TopicPartition, DeletedRecords | KafkaException]:
        """Delete the records before each offset (-1: up to the high watermark)."""
        wanted = {TopicPartition(*tp): offset for tp, offset in before_offsets.items()}
        return self._call(lambda deadline: self._operations.delete_records(wanted, deadline), timeout)

    def list_offsets(self, specs: ByPartition[OffsetSpec],
                     isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                     timeout: float | None = None) -> dict[TopicPartition, ListedOffset | KafkaException]:
        wanted = {TopicPartition(*tp): spec for tp, spec in specs.items()}
        return self._call(lambda deadline: self._operations.list_offsets(wanted, isolation_level, deadline), timeout)

    # replicas: leaders, reassignments, log dirs

    def elect_leaders(self, election_type: ElectionType, partitions: Iterable[tuple[str, int]] | None = None,
                      timeout: float | None = None) -> dict[TopicPartition, KafkaException | None]:
        """Elect the preferred (or, UNCLEAN, any live) replica leader of each partition; None asks
        for every partition, and the answer then lists only those that needed an election. An
        already suitable leader is ELECTION_NOT_NEEDED, as in Kafka."""
        wanted = None if partitions is None else list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))
        kind = ElectionType(election_type)
        return self._call(lambda deadline: self._operations.elect_leaders(kind, wanted, deadline), timeout)

    def alter_partition_reassignments(self, reassignments: ByPartition[Sequence[int] | None],
                                      timeout: float | None = None) -> dict[TopicPartition, KafkaException | None]:
        """Move each partition to the given replicas (None cancels its running reassignment);
        success means accepted: the new replicas catch up in the background."""
        targets = {TopicPartition(*tp): None if replicas is None else list(replicas)
                   for tp, replicas in reassignments.items()}
        return self._call(lambda deadline: self._operations.alter_reassignments(targets, deadline), timeout)

    def list_partition_reassignments(self, partitions: Iterable[tuple[str, int]] | None = None,
                                     timeout: float | None = None) -> dict[TopicPartition, PartitionReassignment]:
        """The running reassignments, of `partitions` or (None) of every partition."""
        wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]
        return self._call(lambda deadline: self._operations.list_reassignments(wanted, deadline), timeout)

    def describe_log_dirs(self, brokers: Iterable[int] | None = None, timeout: float | None = None,
                          ) -> dict[int, dict[str, LogDirDescription] | KafkaException]:
        """Each broker's log dirs (of `brokers`, or every broker) with the replicas they hold."""
        wanted = None if brokers is None else list(dict.fromkeys(brokers))
        return self._call(lambda deadline: self._operations.describe_log_dirs(wanted, deadline), timeout)


# ---- the operations, on the network thread ----

class AdminOperations:
    """Each admin operation as attempts (one round of requests) under a retry loop."""

    def __init__(self, network: NetworkClient, retries: int) -> None:
        self._network = network
        self._coordinators = Coordinators(network)
        self._retries = retries

    # retrying

    @staticmethod
    def _should_retry(error: KafkaException) -> bool:
        return error.retriable and error.code not in _NOT_RETRIED

    async def _per_key(self, what: str, keys: Iterable[K],
                       attempt: Callable[[list[K]], Awaitable[Mapping[K, Any]]], deadline: float) -> dict[K, Any]:
        """Run `attempt(pending keys)` until each key has a final outcome, retrying the keys
        whose outcome is a retriable error; raise when the attempt as a whole keeps failing."""
        loop = asyncio.get_running_loop()
        order = list(dict.fromkeys(keys))
        results: dict[K, Any] = {}
        last_errors: dict[K, KafkaException] = {}
        pending = order
        failures = 0
        while pending:
            request_error = None
            try:
                outcomes = await attempt(pending)
            except KafkaException as error:
                if not self._should_retry(error):
                    raise
                request_error = error
                outcomes = {key: error for key in pending}
            retry = []
            for key in pending:
                outcome = outcomes.get(key, _MISSING)
                if outcome is _MISSING:
                    outcome = KafkaException(ErrorCode.UNKNOWN_SERVER_ERROR, "the broker's response left it out")
                if isinstance(outcome, KafkaException) and self._should_retry(outcome):
                    self._network.note_error(outcome.code)
                    last_errors[key] = outcome
                    retry.append(key)
                else:
                    results[key] = outcome
            if not retry:
                break
            failures += 1
            delay = self._network.retry_backoff.delay_ms(failures) / 1000
            out_of_retries = failures > self._retries
            if out_of_retries or loop.time() + delay >= deadline:
                if request_error is not None:
                    raise request_error if out_of_retries else _timed_out(what, request_error)
                for key in retry:
                    results[key] = last_errors[key] if out_of_retries else _timed_out(what, last_errors[key])
                break
            await asyncio.sleep(delay)
            pending = retry
        return {key: results[key] for key in order}

    async def _single(self, what: str, attempt: Callable[[], Awaitable[T]], deadline: float) -> T:
        """Retry a whole-request operation; its final error is raised."""
        async def as_keyed(_: list[None]) -> dict[None, T]:
            return {None: await attempt()}

        outcome = (await self._per_key(what, [None], as_keyed, deadline))[None]
        if isinstance(outcome, KafkaException):
            raise outcome
        return outcome

    # routing

    def _timeout_ms(self, deadline: float) -> float:
        remaining_ms = (deadline - asyncio.get_running_loop().time()) * 1000
        if remaining_ms <= 0:
            raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, "no time left for another request")
        return min(float(self._network.settings.request_timeout_ms), remaining_ms)

    async def _send(self, request: Any, node_id: int | None, deadline: float,
                    versions: tuple[int, int] | None = None) -> Any:
        return await self._network.send(request, node_id, versions=versions, timeout_ms=self._timeout_ms(deadline))

    async def _known_brokers(self, deadline: float) -> None:
        """Make sure the broker list comes from the cluster (not bootstrap) and is not stale."""
        cluster = self._network.cluster
        if not cluster.bootstrapped or cluster.update_requested:
            await self._network.refresh_metadata((), timeout_ms=self._timeout_ms(deadline))

    async def _controller(self, deadline: float) -> int | None:
        """The controller's node id from fresh enough metadata; None sends to any broker."""
        await self._known_brokers(deadline)
        cluster = self._network.cluster
        return cluster.controller_id if cluster.controller_id in cluster.brokers else None

    @staticmethod
    async def _fan_out(by_node: Mapping[Any, list[K]],
                       send: Callable[[Any, list[K]], Coroutine[Any, Any, Mapping[K, Any]]]) -> dict[K, Any]:
        """`send(node, keys)` to every node at once. A failure of one node (a lost connection, a
        timeout: retried; a node id the cluster does not have: final) becomes the outcome of its
        keys; any other failure of a request (an API the broker lacks) fails the operation."""
        async def one(node: Any, keys: list[K]) -> Mapping[K, Any]:
            try:
                return await send(node, keys)
            except KafkaException as error:
                if not error.retriable and error.code != ErrorCode.BROKER_NOT_AVAILABLE:
                    raise
                return {key: error for key in keys}

        merged: dict[K, Any] = {}
        for outcome in await asyncio.gather(*(one(node, keys) for node, keys in by_node.items())):
            merged.update(outcome)
        return merged

    async def _to_leaders(self, partitions: list[TopicPartition], deadline: float,
                          send: Callable[[int, list[TopicPartition]], Coroutine[Any, Any, Mapping]]) -> dict:
        """Fresh metadata for the partitions' topics, then `send(leader, partitions)` per leader."""
        cluster = await self._network.refresh_metadata({tp.topic for tp in partitions},
                                                       timeout_ms=self._timeout_ms(deadline))
        by_leader, errors = cluster.group_by_leader(partitions)
        outcomes: dict[TopicPartition, Any] = {tp: error_for(code) for tp, code in errors.items()}
        outcomes.update(await self._fan_out(by_leader, send))
        return outcomes

    async def _to_coordinators(self, groups: list[str], deadline: float,
                               send: Callable[[int, list[str]], Coroutine[Any, Any, Mapping]],
                               key_type: CoordinatorType = CoordinatorType.GROUP) -> dict:
        """`send(coordinator, keys)` per coordinator of the groups (or transactional ids);
        forget coordinators that moved or failed."""
        found = await self._coordinators.find_many(groups, key_type, timeout_ms=self._timeout_ms(deadline))
        outcomes: dict[str, Any] = {group: node for group, node in found.items() if isinstance(node, KafkaException)}
        by_node: dict[int, list[str]] = {}
        for group, node in found.items():
            if not isinstance(node, KafkaException):
                by_node.setdefault(node, []).append(group)
        outcomes.update(await self._fan_out(by_node, send))
        for group, outcome in outcomes.items():
            if isinstance(outcome, KafkaException) and _coordinator_gone(outcome):
                self._coordinators.invalidate(group, key_type)
        return outcomes

    async def _with_coordinator(self, group: str, deadline: float,
                                send: Callable[[int], Coroutine[Any, Any, T]]) -> T:
        node = await self._coordinators.find(group, timeout_ms=self._timeout_ms(deadline))
        try:
            return await send(node)
        except KafkaException as error:
            if _coordinator_gone(error):
                self._coordinators.invalidate(group)
            raise

    # topics

    async def create_topics(self, topics: list[NewTopic], validate_only: bool,
                            deadline: float) -> dict[str, CreatedTopic | KafkaException]:
        by_name = {topic.name: topic for topic in topics}

        async def attempt(names: list[str]) -> dict[str, Any]:
            controller = await self._controller(deadline)
            request = CreateTopicsRequest(
                topics=[_creatable_topic(by_name[name]) for name in names],
                timeout_ms=int(self._timeout_ms(deadline)), validate_only=validate_only)
            response = await self._send(request, controller, deadline, versions=(1 if validate_only else 0, 7))
            return {result.name: _created_topic(result) if result.error_code == ErrorCode.NONE
                    else error_for(result.error_code, result.error_message) for result in response.topics}

        return await self._per_key("create_topics", by_name, attempt, deadline)

    async def delete_topics(self, names: list[str], deadline: float) -> dict[str, KafkaException | None]:
        async def attempt(pending: list[str]) -> dict[str, Any]:
            controller = await self._controller(deadline)
            request = DeleteTopicsRequest(
                topic_names=pending, topics=[DeleteTopicsRequest.DeleteTopicState(name=name) for name in pending],
                timeout_ms=int(self._timeout_ms(deadline)))
            response = await self._send(request, controller, deadline)
            return {result.name: _error_or_none(result.error_code, result.error_message)
                    for result in response.responses}

        return await self._per_key("delete_topics", names, attempt, deadline)

    async def list_topics(self, internal: bool, deadline: float) -> dict[str, TopicListing]:
        async def attempt() -> dict[str, TopicListing]:
            cluster = await self._network.refresh_metadata(None, timeout_ms=self._timeout_ms(deadline))
            return {name: TopicListing(name, topic.topic_id, topic.is_internal)
                    for name, topic in sorted(cluster.topics.items()) if internal or not topic.is_internal}

        return await self._single("list_topics", attempt, deadline)

    async def describe_topics(self, names: list[str], deadline: float) -> dict[str, TopicDescription | KafkaException]:
        async def attempt(pending: list[str]) -> dict[str, Any]:
            cluster = await self._network.refresh_metadata(pending, timeout_ms=self._timeout_ms(deadline))
            outcomes: dict[str, Any] = {}
            for name in pending:
                topic = cluster.topics.get(name)
                if topic is None:
                    outcomes[name] = error_for(cluster.topic_errors.get(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                elif topic.error_code != ErrorCode.NONE:
                    outcomes[name] = error_for(topic.error_code)
                else:
                    outcomes[name] = TopicDescription(
                        name, topic.topic_id, topic.is_internal,
                        [topic.partitions[index] for index in sorted(topic.partitions)])
            return outcomes

        return await self._per_key("describe_topics", names, attempt, deadline)

    async def create_partitions(self, totals: dict[str, int], validate_only: bool,
                                deadline: float) -> dict[str, KafkaException | None]:
        async def attempt(names: list[str]) -> dict[str, Any]:
            controller = await self._controller(deadline)
            request = CreatePartitionsRequest(
                topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=totals[name], assignments=None)
                        for name in names],
                timeout_ms=int(self._timeout_ms(deadline)), validate_only=validate_only)
            response = await self._send(request, controller, deadline)
            return {result.name: _error_or_none(result.error_code, result.error_message)
                    for result in response.results}

        return await self._per_key("create_partitions", totals, attempt, deadline)

    # configs

    async def describe_configs(self, resources: list[ConfigResource], include_synonyms: bool,
                               deadline: float) -> dict[ConfigResource, Any]:
        async def send(node: int | None, pending: list[ConfigResource]) -> dict[ConfigResource, Any]:
            request = DescribeConfigsRequest(
                resources=[DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=resource.type, resource_name=resource.name, configuration_keys=None)
                    for resource in pending],
                include_synonyms=include_synonyms)
            response = await self._send(request, node, deadline)
            return {ConfigResource(result.resource_type, result.resource_name):
                    error_for(result.error_code, result.error_message) if result.error_code != ErrorCode.NONE
                    else {entry.name: _config_entry(entry) for entry in result.configs}
                    for result in response.results}

        return await self._per_key(
            "describe_configs", resources,
            lambda pending: self._fan_out(_by_config_node(pending), send), deadline)

    async def alter_configs(self, changes: dict[ConfigResource, dict[str, str | None]], validate_only: bool,
                            deadline: float) -> dict[ConfigResource, KafkaException | None]:
        async def send(node: int | None, pending: list[ConfigResource]) -> dict[ConfigResource, Any]:
            request = AlterConfigsRequest(
                resources=[AlterConfigsRequest.AlterConfigsResource(
                    resource_type=resource.type, resource_name=resource.name,
                    configs=[AlterConfigsRequest.AlterableConfig(name=name, value=value)
                             for name, value in changes[resource].items()])
                    for resource in pending],
                validate_only=validate_only)
            response = await self._send(request, node, deadline)
            return _config_results(response.responses)

        async def attempt(pending: list[ConfigResource]) -> dict[ConfigResource, Any]:
            return await self._fan_out(await self._alter_config_nodes(pending, deadline), send)

        return await self._per_key("alter_configs", changes, attempt, deadline)

    async def incremental_alter_configs(self, changes: dict[ConfigResource, list[AlterConfigOp]],
                                        validate_only: bool, deadline: float) -> dict[ConfigResource, Any]:
        async def send(node: int | None, pending: list[ConfigResource]) -> dict[ConfigResource, Any]:
            request = IncrementalAlterConfigsRequest(
                resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=resource.type, resource_name=resource.name,
                    configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                        name=op.name, config_operation=AlterConfigOpType(op.op), value=op.value)
                        for op in changes[resource]])
                    for resource in pending],
                validate_only=validate_only)
            response = await self._send(request, node, deadline)
            return _config_results(response.responses)

        async def attempt(pending: list[ConfigResource]) -> dict[ConfigResource, Any]:
            return await self._fan_out(await self._alter_config_nodes(pending, deadline), send)

        return await self._per_key("incremental_alter_configs", changes, attempt, deadline)

    async def _alter_config_nodes(self, resources: list[ConfigResource],
                                  deadline: float) -> dict[int | None, list[ConfigResource]]:
        """Where config changes go: a broker resource to that broker; from `bootstrap.controllers`,
        every change to the active controller, which alone commits them (Kafka's
        ConstantBrokerOrActiveKController)."""
        if not self._network.settings.to_controllers:
            return _by_config_node(resources)
        return {await self._controller(deadline): resources}

    # cluster

    async def describe_cluster(self, deadline: float) -> ClusterDescription:
        async def attempt() -> ClusterDescription:
            connection = await self._network.any_connection(deadline=deadline)
            if not connection.api_versions.supports(ApiKey.DESCRIBE_CLUSTER):
                cluster = await self._network.refresh_metadata((), timeout_ms=self._timeout_ms(deadline))
                nodes = [cluster.brokers[node_id] for node_id in sorted(cluster.brokers)]
                return ClusterDescription(cluster.cluster_id, cluster.brokers.get(cluster.controller_id), nodes)
            if self._network.settings.to_controllers:  # KIP-919: the controllers' endpoints
                response = await connection.send(controllers.metadata_request(), versions=controllers.VERSIONS,
                                                 timeout_ms=self._timeout_ms(deadline))
            else:
                response = await connection.send(DescribeClusterRequest(), timeout_ms=self._timeout_ms(deadline))
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code, response.error_message)
            nodes = sorted((Node(broker.broker_id, broker.host, broker.port, broker.rack)
                            for broker in response.brokers), key=lambda node: node.node_id)
            controller = next((node for node in nodes if node.node_id == response.controller_id), None)
            return ClusterDescription(response.cluster_id, controller, nodes)

        return await self._single("describe_cluster", attempt, deadline)

    async def describe_metadata_quorum(self, deadline: float) -> QuorumInfo:
        async def attempt() -> QuorumInfo:
            request = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
                topic_name=METADATA_TOPIC, partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])
            # a broker forwards it to the leader; from bootstrap.controllers it goes there directly
            leader = await self._controller(deadline) if self._network.settings.to_controllers else None
            response = await self._send(request, leader, deadline)
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code, response.error_message)
            partition = response.topics[0].partitions[0] if response.topics and response.topics[0].partitions \
                else None
            if partition is None:
                raise error_for(ErrorCode.UNKNOWN_SERVER_ERROR, "DescribeQuorum answered no partition")
            if partition.error_code != ErrorCode.NONE:
                raise error_for(partition.error_code, partition.error_message)

            def replicas(states) -> list[QuorumReplica]:
                return [QuorumReplica(s.replica_id, s.log_end_offset, s.last_fetch_timestamp,
                                      s.last_caught_up_timestamp) for s in states]

            return QuorumInfo(partition.leader_id, partition.leader_epoch, partition.high_watermark,
                              replicas(partition.current_voters), replicas(partition.observers))

        return await self._single("describe_metadata_quorum", attempt, deadline)

    # consumer groups

    async def list_consumer_groups(self, states: list[str] | None, deadline: float) -> list[ConsumerGroupListing]:
        async def from_node(node: int) -> list[ConsumerGroupListing]:
            request = ListGroupsRequest(states_filter=states or [])
            response = await self._send(request, node, deadline, versions=(4, 5) if states else None)
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code)
            return [ConsumerGroupListing(group.group_id, group.protocol_type, group.group_state or None,
                                         group.group_type or "classic")
                    for group in response.groups if group.protocol_type in ("consumer", "")]

        async def attempt() -> list[ConsumerGroupListing]:
            await self._known_brokers(deadline)
            per_node = await asyncio.gather(*(from_node(node) for node in list(self._network.cluster.brokers)))
            listings = {listing.group_id: listing for found in per_node for listing in found}
            return [listings[group_id] for group_id in sorted(listings)]

        return await self._single("list_consumer_groups", attempt, deadline)

    async def list_share_groups(self, deadline: float) -> list[ShareGroupListing]:
        async def from_node(node: int) -> list[ShareGroupListing]:
            response = await self._send(ListGroupsRequest(types_filter=["share"]), node, deadline, versions=(5, 5))
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code)
            return [ShareGroupListing(group.group_id, group.group_state or None)
                    for group in response.groups if group.group_type == "share"]

        async def attempt() -> list[ShareGroupListing]:
            await self._known_brokers(deadline)
            per_node = await asyncio.gather(*(from_node(node) for node in list(self._network.cluster.brokers)))
            listings = {listing.group_id: listing for found in per_node for listing in found}
            return [listings[group_id] for group_id in sorted(listings)]

        return await self._single("list_share_groups", attempt, deadline)

    async def describe_share_groups(self, groups: list[str], deadline: float) -> dict[str, Any]:
        async def send(node: int, pending: list[str]) -> dict[str, Any]:
            response = await self._send(ShareGroupDescribeRequest(group_ids=pending), node, deadline)
            coordinator = self._network.cluster.node(node)
            return {group.group_id: error_for(group.error_code) if group.error_code != ErrorCode.NONE
                    else share_group_description(group, coordinator) for group in response.groups}

        return await self._per_key(
            "describe_share_groups", groups, lambda pending: self._to_coordinators(pending, deadline, send), deadline)

    async def describe_consumer_groups(self, groups: list[str], deadline: float) -> dict[str, Any]:
        async def send(node: int, pending: list[str]) -> dict[str, Any]:
            response = await self._send(DescribeGroupsRequest(groups=pending), node, deadline)
            coordinator = self._network.cluster.node(node)
            described: dict[str, Any] = {
                group.group_id: error_for(group.error_code) if group.error_code != ErrorCode.NONE
                else _group_description(group, coordinator) for group in response.groups}
            # DescribeGroups says a KIP-848 group is Dead (GROUP_ID_NOT_FOUND from v6): ask
            # ConsumerGroupDescribe, where the broker has it (the reverse of Kafka's admin client).
            others = [group for group, outcome in described.items()
                      if (isinstance(outcome, KafkaException) and outcome.code == ErrorCode.GROUP_ID_NOT_FOUND)
                      or (isinstance(outcome, ConsumerGroupDescription) and outcome.state == "Dead")]
            if others:
                try:
                    answer = await self._send(ConsumerGroupDescribeRequest(group_ids=others), node, deadline)
                except KafkaException as error:
                    if error.code != ErrorCode.UNSUPPORTED_VERSION:
                        raise
                else:
                    described.update({group.group_id: _consumer_group_description(group, coordinator)
                                      for group in answer.groups if group.error_code == ErrorCode.NONE})
            return described

        return await self._per_key(
            "describe_consumer_groups", groups,
            lambda pending: self._to_coordinators(pending, deadline, send), deadline)

    # transactions

    async def list_transactions(self, states: list[str], producer_ids: list[int], duration_ms: int,
                                deadline: float) -> list[TransactionListing]:
        async def from_node(node: int) -> list[TransactionListing]:
            request = ListTransactionsRequest(state_filters=states, producer_id_filters=producer_ids,
                                              duration_filter=duration_ms)
            response = await self._send(request, node, deadline, versions=(1, 1) if duration_ms >= 0 else None)
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code)
            return [TransactionListing(t.transactional_id, t.producer_id, t.transaction_state, node)
                    for t in response.transaction_states]

        async def attempt() -> list[TransactionListing]:
            await self._known_brokers(deadline)
            per_node = await asyncio.gather(*(from_node(node) for node in sorted(self._network.cluster.brokers)))
            return sorted((listing for found in per_node for listing in found),
                          key=lambda listing: listing.transactional_id)

        return await self._single("list_transactions", attempt, deadline)

    async def describe_transactions(self, transactional_ids: list[str], deadline: float) -> dict[str, Any]:
        async def send(node: int, pending: list[str]) -> dict[str, Any]:
            response = await self._send(DescribeTransactionsRequest(transactional_ids=pending), node, deadline)
            return {state.transactional_id: error_for(state.error_code) if state.error_code != ErrorCode.NONE
                    else TransactionDescription(
                        node, state.transaction_state, state.producer_id, state.producer_epoch,
                        state.transaction_timeout_ms,
                        None if state.transaction_start_time_ms < 0 else state.transaction_start_time_ms,
                        tuple(TopicPartition(topic.topic, index) for topic in state.topics
                              for index in topic.partitions))
                    for state in response.transaction_states}

        return await self._per_key(
            "describe_transactions", transactional_ids,
            lambda pending: self._to_coordinators(pending, deadline, send, CoordinatorType.TRANSACTION), deadline)

    async def delete_consumer_groups(self, groups: list[str], deadline: float) -> dict[str, KafkaException | None]:
        async def send(node: int, pending: list[str]) -> dict[str, Any]:
            response = await self._send(DeleteGroupsRequest(groups_names=pending), node, deadline)
            return {result.group_id: _error_or_none(result.error_code) for result in response.results}

        return await self._per_key(
            "delete_consumer_groups", groups,
            lambda pending: self._to_coordinators(pending, deadline, send), deadline)

    async def share_group_offsets(self, group: str, send: Callable[[int], Coroutine[Any, Any, Any]],
                                  deadline: float) -> Any:
        """One share group offsets request to the group's coordinator, retried while it moves;
        the group's error raised."""
        async def to_node(node: int, _: list[str]) -> dict[str, Any]:
            return {group: await send(node)}

        outcomes = await self._per_key("share_group_offsets", [group],
                                       lambda pending: self._to_coordinators(pending, deadline, to_node), deadline)
        outcome = outcomes[group]
        if isinstance(outcome, KafkaException):
            raise outcome
        return outcome

    async def describe_share_offsets(self, group: str, by_topic: dict[str, list[int]] | None, node: int,
                                     deadline: float) -> dict[TopicPartition, int | None | KafkaException]:
        asked = DescribeShareGroupOffsetsRequest
        request = asked(groups=[asked.DescribeShareGroupOffsetsRequestGroup(
            group_id=group, topics=None if by_topic is None else [
                asked.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=p) for t, p in by_topic.items()])])
        answer = (await self._send(request, node, deadline)).groups[0]
        if answer.error_code != ErrorCode.NONE:
            return error_for(answer.error_code, answer.error_message)
        return {TopicPartition(topic.topic_name, p.partition_index):
                error_for(p.error_code, p.error_message) if p.error_code != ErrorCode.NONE
                else (p.start_offset if p.start_offset >= 0 else None)
                for topic in answer.topics for p in topic.partitions}

    async def alter_share_offsets(self, group: str, by_topic: dict[str, dict[int, int]], node: int,
                                  deadline: float) -> Any:
        request = AlterShareGroupOffsetsRequest(group_id=group, topics=[
            AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
                AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestPartition(partition_index=i, start_offset=o)
                for i, o in partitions.items()]) for topic, partitions in by_topic.items()])
        response = await self._send(request, node, deadline)
        if response.error_code != ErrorCode.NONE:
            return error_for(response.error_code, response.error_message)
        return {TopicPartition(topic.topic_name, p.partition_index): _error_or_none(p.error_code, p.error_message)
                for topic in response.responses for p in topic.partitions}

    async def delete_share_offsets(self, group: str, topics: list[str], node: int, deadline: float) -> Any:
        request = DeleteShareGroupOffsetsRequest(group_id=group, topics=[
            DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=topic) for topic in topics])
        response = await self._send(request, node, deadline)
        if response.error_code != ErrorCode.NONE:
            return error_for(response.error_code, response.error_message)
        return {topic.topic_name: _error_or_none(topic.error_code, topic.error_message) for topic in response.responses}

    async def list_group_offsets(self, group: str, partitions: list[TopicPartition] | None, require_stable: bool,
                                 deadline: float, *, member: tuple[str, int] | None = None,
                                 ) -> dict[TopicPartition, OffsetAndMetadata | KafkaException]:
        """`member`: (member id, epoch) of a KIP-848 consumer asking for its own group (OffsetFetch v9)."""
        by_topic = _partitions_by_topic(partitions) if partitions is not None else None
        request = OffsetFetchRequest(
            group_id=group, require_stable=require_stable,
            topics=None if by_topic is None else [
                OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=indexes)
                for topic, indexes in by_topic.items()],
            groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id=group, member_id=member[0] if member else None, member_epoch=member[1] if member else -1,
                topics=None if by_topic is None else [
                    OffsetFetchRequest.OffsetFetchRequestTopics(name=topic, partition_indexes=indexes)
                    for topic, indexes in by_topic.items()])])
        lowest = 9 if member else 7 if require_stable else (2 if partitions is None else 1)

        async def send(node: int) -> dict[TopicPartition, Any]:
            response = await self._send(request, node, deadline, versions=(lowest, 9))
            answer = response.groups[0] if response.groups else response
            if answer.error_code != ErrorCode.NONE:
                raise error_for(answer.error_code)
            offsets: dict[TopicPartition, Any] = {}
            for topic in answer.topics:
                for partition in topic.partitions:
                    key = TopicPartition(topic.name, partition.partition_index)
                    if partition.error_code == ErrorCode.NONE:
                        offsets[key] = OffsetAndMetadata(
                            partition.committed_offset, partition.metadata or "",
                            partition.committed_leader_epoch if partition.committed_leader_epoch >= 0 else None)
                        continue
                    error = error_for(partition.error_code)
                    if error.retriable:
                        raise error
                    offsets[key] = error
            return dict(sorted(offsets.items()))

        return await self._single("list_consumer_group_offsets",
                                  lambda: self._with_coordinator(group, deadline, send), deadline)

    async def alter_group_offsets(self, group: str, commits: dict[TopicPartition, OffsetAndMetadata],
                                  deadline: float) -> dict[TopicPartition, KafkaException | None]:
        async def attempt(pending: list[TopicPartition]) -> dict[TopicPartition, Any]:
            async def send(node: int) -> dict[TopicPartition, Any]:
                request = OffsetCommitRequest(
                    group_id=group, generation_id_or_member_epoch=-1, member_id="",
                    topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=index, committed_offset=commits[TopicPartition(topic, index)].offset,
                            committed_leader_epoch=_epoch_or_unknown(commits[TopicPartition(topic, index)]),
                            committed_metadata=commits[TopicPartition(topic, index)].metadata)
                        for index in indexes]) for topic, indexes in _partitions_by_topic(pending).items()])
                response = await self._send(request, node, deadline)
                outcomes = _partition_results(response.topics)
                if any(isinstance(error, KafkaException) and _coordinator_gone(error) for error in outcomes.values()):
                    self._coordinators.invalidate(group)
                return outcomes

            return await self._with_coordinator(group, deadline, send)

        return await self._per_key("alter_consumer_group_offsets", commits, attempt, deadline)

    async def delete_group_offsets(self, group: str, partitions: list[TopicPartition],
                                   deadline: float) -> dict[TopicPartition, KafkaException | None]:
        async def attempt(pending: list[TopicPartition]) -> dict[TopicPartition, Any]:
            async def send(node: int) -> dict[TopicPartition, Any]:
                request = OffsetDeleteRequest(group_id=group, topics=[
                    OffsetDeleteRequest.OffsetDeleteRequestTopic(name=topic, partitions=[
                        OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=index) for index in indexes])
                    for topic, indexes in _partitions_by_topic(pending).items()])
                response = await self._send(request, node, deadline)
                if response.error_code != ErrorCode.NONE:
                    raise error_for(response.error_code)
                return _partition_results(response.topics)

            return await self._with_coordinator(group, deadline, send)

        return await self._per_key("delete_consumer_group_offsets", partitions, attempt, deadline)

    # partitions

    async def delete_records(self, before: dict[TopicPartition, int],
                             deadline: float) -> dict[TopicPartition, DeletedRecords | KafkaException]:
        async def send(leader: int, pending: list[TopicPartition]) -> dict[TopicPartition, Any]:
            request = DeleteRecordsRequest(timeout_ms=int(self._timeout_ms(deadline)), topics=[
                DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(
                        partition_index=index, offset=before[TopicPartition(topic, index)]) for index in indexes])
                for topic, indexes in _partitions_by_topic(pending).items()])
            response = await self._send(request, leader, deadline)
            return {TopicPartition(topic.name, partition.partition_index):
                    DeletedRecords(partition.low_watermark) if partition.error_code == ErrorCode.NONE
                    else error_for(partition.error_code)
                    for topic in response.topics for partition in topic.partitions}

        return await self._per_key("delete_records", before,
                                   lambda pending: self._to_leaders(pending, deadline, send), deadline)

    async def list_offsets(self, specs: dict[TopicPartition, OffsetSpec], isolation_level: IsolationLevel,
                           deadline: float) -> dict[TopicPartition, ListedOffset | KafkaException]:
        async def send(leader: int, pending: list[TopicPartition]) -> dict[TopicPartition, Any]:
            needs_max_timestamp = any(specs[tp].timestamp == OffsetSpec.MAX_TIMESTAMP for tp in pending)
            lowest = 7 if needs_max_timestamp else (2 if isolation_level else 1)
            request = ListOffsetsRequest(
                replica_id=-1, isolation_level=isolation_level, timeout_ms=int(self._timeout_ms(deadline)),
                topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=index, timestamp=specs[TopicPartition(topic, index)].timestamp)
                    for index in indexes]) for topic, indexes in _partitions_by_topic(pending).items()])
            response = await self._send(request, leader, deadline, versions=(lowest, 10))
            return {TopicPartition(topic.name, partition.partition_index):
                    ListedOffset(partition.offset, partition.timestamp,
                                 partition.leader_epoch if partition.leader_epoch >= 0 else None)
                    if partition.error_code == ErrorCode.NONE else error_for(partition.error_code)
                    for topic in response.topics for partition in topic.partitions}

        return await self._per_key("list_offsets", specs,
                                   lambda pending: self._to_leaders(pending, deadline, send), deadline)


    # replicas

    async def alter_user_scram_credentials(
            self, changes: list[UserScramCredentialUpsertion | UserScramCredentialDeletion],
            deadline: float) -> dict[str, KafkaException | None]:
        request = AlterUserScramCredentialsRequest(
            deletions=[c.to_request() for c in changes if isinstance(c, UserScramCredentialDeletion)],
            upsertions=[c.to_request() for c in changes if isinstance(c, UserScramCredentialUpsertion)])

        async def attempt() -> dict[str, KafkaException | None]:
            response = await self._send(request, await self._controller(deadline), deadline)
            return {result.user: _error_or_none(result.error_code, result.error_message) for result in response.results}

        return await self._single("alter_user_scram_credentials", attempt, deadline)

    async def describe_user_scram_credentials(self, users: list[str] | None, deadline: float
                                              ) -> dict[str, list[ScramCredentialInfo] | KafkaException]:
        request = DescribeUserScramCredentialsRequest(
            users=None if users is None else [DescribeUserScramCredentialsRequest.UserName(name=u) for u in users])

        async def attempt() -> dict[str, list[ScramCredentialInfo] | KafkaException]:
            response = await self._send(request, None, deadline)
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code, response.error_message)
            return {result.user: error_for(result.error_code, result.error_message) if result.error_code else
                    [ScramCredentialInfo(mechanism_name(info.mechanism), info.iterations)
                     for info in result.credential_infos] for result in response.results}

        return await self._single("describe_user_scram_credentials", attempt, deadline)

    async def elect_leaders(self, election_type: ElectionType, partitions: list[TopicPartition] | None,
                            deadline: float) -> dict[TopicPartition, KafkaException | None]:
        topics = None if partitions is None else [
            ElectLeadersRequest.TopicPartitions(topic=topic, partitions=indexes)
            for topic, indexes in _partitions_by_topic(partitions).items()]

        async def attempt() -> dict[TopicPartition, KafkaException | None]:
            request = ElectLeadersRequest(election_type=election_type, topic_partitions=topics,
                                          timeout_ms=int(self._timeout_ms(deadline)))
            versions = (1, 2) if election_type != ElectionType.PREFERRED else None
            response = await self._send(request, await self._controller(deadline), deadline, versions=versions)
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code)
            return {TopicPartition(topic.topic, partition.partition_id):
                    _error_or_none(partition.error_code, partition.error_message)
                    for topic in response.replica_election_results for partition in topic.partition_result}

        return await self._single("elect_leaders", attempt, deadline)

    async def alter_reassignments(self, targets: dict[TopicPartition, list[int] | None],
                                  deadline: float) -> dict[TopicPartition, KafkaException | None]:
        async def attempt(pending: list[TopicPartition]) -> dict[TopicPartition, Any]:
            request = AlterPartitionReassignmentsRequest(
                timeout_ms=int(self._timeout_ms(deadline)),
                topics=[AlterPartitionReassignmentsRequest.ReassignableTopic(name=topic, partitions=[
                    AlterPartitionReassignmentsRequest.ReassignablePartition(
                        partition_index=index, replicas=targets[TopicPartition(topic, index)])
                    for index in indexes]) for topic, indexes in _partitions_by_topic(pending).items()])
            response = await self._send(request, await self._controller(deadline), deadline)
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code, response.error_message)
            return {TopicPartition(topic.name, partition.partition_index):
                    _error_or_none(partition.error_code, partition.error_message)
                    for topic in response.responses for partition in topic.partitions}

        return await self._per_key("alter_partition_reassignments", targets, attempt, deadline)

    async def list_reassignments(self, partitions: list[TopicPartition] | None,
                                 deadline: float) -> dict[TopicPartition, PartitionReassignment]:
        topics = None if partitions is None else [
            ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(name=topic, partition_indexes=indexes)
            for topic, indexes in _partitions_by_topic(partitions).items()]

        async def attempt() -> dict[TopicPartition, PartitionReassignment]:
            request = ListPartitionReassignmentsRequest(timeout_ms=int(self._timeout_ms(deadline)), topics=topics)
            response = await self._send(request, await self._controller(deadline), deadline)
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code, response.error_message)
            return {TopicPartition(topic.name, partition.partition_index): PartitionReassignment(
                list(partition.replicas), list(partition.adding_replicas), list(partition.removing_replicas))
                for topic in response.topics for partition in topic.partitions}

        return await self._single("list_partition_reassignments", attempt, deadline)

    async def describe_log_dirs(self, brokers: list[int] | None, deadline: float) -> dict[int, Any]:
        async def send(node: int, _: list[int]) -> dict[int, Any]:
            response = await self._send(DescribeLogDirsRequest(topics=None), node, deadline)
            if response.error_code != ErrorCode.NONE:
                raise error_for(response.error_code)
            return {node: {result.log_dir: _log_dir_description(result) for result in response.results}}

        if brokers is None:
            await self._known_brokers(deadline)
            brokers = sorted(self._network.cluster.brokers)
        return await self._per_key("describe_log_dirs", brokers,
                                   lambda pending: self._fan_out({node: [node] for node in pending}, send), deadline)


# ---- helpers ----

def refuse_duplicates(names: Iterable[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise KafkaException(ClientErrorCode._INVALID_ARG, f"topic {name!r} is listed twice")
        seen.add(name)


def _timed_out(what: str, last_error: KafkaException) -> KafkaTimeoutError:
    error = KafkaTimeoutError(ClientErrorCode._TIMED_OUT, f"{what} timed out; last error: {last_error}")
    error.__cause__ = last_error
    return error


def _coordinator_gone(error: KafkaException) -> bool:
    return error.code in COORDINATOR_MOVED_ERRORS or isinstance(error, KafkaConnectionError)


def _error_or_none(code: int, message: str | None = None) -> KafkaException | None:
    return None if code == ErrorCode.NONE else error_for(code, message)


def _partitions_by_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return by_topic


def _partition_results(topics: Iterable[Any]) -> dict[TopicPartition, KafkaException | None]:
    return {TopicPartition(topic.name, partition.partition_index): _error_or_none(partition.error_code)
            for topic in topics for partition in topic.partitions}


def _epoch_or_unknown(offset: OffsetAndMetadata) -> int:
    return -1 if offset.leader_epoch is None else offset.leader_epoch


def _creatable_topic(topic: NewTopic) -> Any:
    assignments = [CreateTopicsRequest.CreatableReplicaAssignment(partition_index=index, broker_ids=list(brokers))
                   for index, brokers in enumerate(topic.replica_assignment or ())]
    return CreateTopicsRequest.CreatableTopic(
        name=topic.name, num_partitions=topic.num_partitions, replication_factor=topic.replication_factor,
        assignments=assignments,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=name, value=value)
                 for name, value in topic.config.items()])


def _created_topic(result: Any) -> CreatedTopic:
    return CreatedTopic(
        name=result.name, topic_id=result.topic_id if result.topic_id != ZERO_UUID else None,
        num_partitions=result.num_partitions, replication_factor=result.replication_factor,
        config={config.name: config.value for config in result.configs or ()})


def _by_config_node(resources: Iterable[ConfigResource]) -> dict[int | None, list[ConfigResource]]:
    """Broker and broker-logger resources go to that broker; everything else to any broker."""
    by_node: dict[int | None, list[ConfigResource]] = {}
    for resource in resources:
        node = None
        if resource.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and resource.name.isdigit():
            node = int(resource.name)
        by_node.setdefault(node, []).append(resource)
    return by_node


def _config_results(results: Iterable[Any]) -> dict[ConfigResource, KafkaException | None]:
    return {ConfigResource(result.resource_type, result.resource_name):
            _error_or_none(result.error_code, result.error_message) for result in results}


def _config_source(value: int) -> ConfigSource:
    try:
        return ConfigSource(value)
    except ValueError:
        return ConfigSource.UNKNOWN


def _config_entry(entry: Any) -> ConfigEntry:
    # DescribeConfigs v0 has is_default and no source; v1+ has the source instead.
    if entry.config_source >= 0:
        source = _config_source(entry.config_source)
        is_default = source == ConfigSource.DEFAULT_CONFIG
    else:
        is_default = entry.is_default
        source = ConfigSource.DEFAULT_CONFIG if is_default else ConfigSource.UNKNOWN
    return ConfigEntry(
        name=entry.name, value=entry.value, source=source, is_read_only=entry.read_only, is_default=is_default,
        is_sensitive=entry.is_sensitive,
        synonyms=[ConfigSynonym(synonym.name, synonym.value, _config_source(synonym.source))
                  for synonym in entry.synonyms])


def _decode_assignment(data: bytes) -> list[TopicPartition] | None:
    """Partitions of a ConsumerProtocolAssignment (v0–v3; newer versions read as v3, as Kafka
    does: their added fields follow the known ones)."""
    try:
        reader = Reader(data)
        version = reader.int16()
        if version < 0:
            return None
        assignment = ConsumerProtocolAssignment.decode(reader, min(version, 3))
    except DecodeError:
        return None
    return [TopicPartition(topic.topic, index)
            for topic in assignment.assigned_partitions for index in topic.partitions]


def _log_dir_description(result: Any) -> LogDirDescription:
    return LogDirDescription(
        error=_error_or_none(result.error_code),
        replica_infos={TopicPartition(topic.name, partition.partition_index): ReplicaInfo(
            partition.partition_size, partition.offset_lag, partition.is_future_key)
            for topic in result.topics for partition in topic.partitions},
        total_bytes=result.total_bytes if result.total_bytes >= 0 else None,
        usable_bytes=result.usable_bytes if result.usable_bytes >= 0 else None)


def _consumer_group_description(group: Any, coordinator: Node | None) -> ConsumerGroupDescription:
    """A KIP-848 group from ConsumerGroupDescribe (its assignor stands in the protocol column)."""
    def partitions(assignment: Any) -> list[TopicPartition]:
        return [TopicPartition(topic.topic_name, partition)
                for topic in assignment.topic_partitions for partition in topic.partitions]

    members = [MemberDescription(
        member_id=member.member_id, group_instance_id=member.instance_id, client_id=member.client_id,
        client_host=member.client_host, assignment=partitions(member.assignment), member_epoch=member.member_epoch,
        target_assignment=partitions(member.target_assignment)) for member in group.members]
    return ConsumerGroupDescription(
        group_id=group.group_id, state=group.group_state, protocol_type="consumer", protocol=group.assignor_name,
        members=members, coordinator=coordinator, group_type="consumer", group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch)


def _group_description(group: Any, coordinator: Node | None) -> ConsumerGroupDescription:
    consumer_protocol = group.protocol_type == "consumer"
    members = [MemberDescription(
        member_id=member.member_id, group_instance_id=member.group_instance_id, client_id=member.client_id,
        client_host=member.client_host,
        assignment=(_decode_assignment(member.member_assignment) if member.member_assignment else [])
        if consumer_protocol else None)
        for member in group.members]
    return ConsumerGroupDescription(
        group_id=group.group_id, state=group.group_state, protocol_type=group.protocol_type,
        protocol=group.protocol_data, members=members, coordinator=coordinator)
