"""The console's pages as data: what a page shows, gathered with AdminClient calls.

Every method is synchronous (the AdminClient's calls block on its network thread) and raises the
client's KafkaException when the cluster as a whole cannot be reached; a failure of one optional
piece (DescribeQuorum on a cluster without KRaft, DescribeLogDirs on a broker that lacks it) is
shown as missing, not as a failed page.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

from gregor.client import AdminClient, KafkaException, TopicPartition
from gregor.client.admin import (
    ConfigEntry, ConfigResource, ConsumerGroupDescription, ListedOffset, LogDirDescription, OffsetSpec,
    QuorumInfo, ResourceType,
)
from gregor.client.network import PartitionMetadata
from gregor.console.brokers import BrokerRegistry, BrokerStatus
from gregor.console.health import Health, PartitionState, StateCounts, count, partition_health

MIN_ISR = "min.insync.replicas"


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    health: Health
    start: int | None
    end: int | None
    size: int | None

    @property
    def messages(self) -> int | None:
        return None if self.start is None or self.end is None else self.end - self.start


@dataclass(frozen=True)
class TopicSummary:
    name: str
    internal: bool
    partitions: int
    replication_factor: int
    counts: StateCounts
    size: int | None
    messages: int | None


@dataclass(frozen=True)
class ClusterOverview:
    cluster_id: str | None
    controller_id: int | None
    brokers: list[BrokerStatus]
    leaders: dict[int, int]
    """Partitions each broker leads."""
    replicas: dict[int, int]
    """Replicas each broker holds (by assignment)."""
    quorum: QuorumInfo | None
    quorum_error: str | None
    counts: StateCounts
    troubled: list[PartitionView]
    """Partitions not fully healthy, worst first."""
    topics: int


@dataclass(frozen=True)
class TopicDetail:
    name: str
    topic_id: str | None
    internal: bool
    partitions: list[PartitionView]
    configs: list[ConfigEntry]
    counts: StateCounts


@dataclass(frozen=True)
class GroupSummary:
    group_id: str
    state: str
    protocol: str
    members: int
    lag: int | None


@dataclass(frozen=True)
class LagRow:
    """One line of `gregor consumer-groups --describe`: the same columns and rules."""

    topic: str
    partition: int
    current: int | None
    end: int | None
    lag: int | None
    member_id: str | None
    host: str | None
    client_id: str | None


@dataclass(frozen=True)
class GroupDetail:
    description: ConsumerGroupDescription
    rows: list[LagRow]

    @property
    def total_lag(self) -> int:
        return sum(row.lag for row in self.rows if row.lag is not None)


class Inspector:
    """The data of each page, read through one AdminClient."""

    def __init__(self, admin: AdminClient, registry: BrokerRegistry,
                 clock: Callable[[], float] = time.time) -> None:
        self.admin = admin
        self.registry = registry
        self._clock = clock

    # cluster

    def brokers(self, partitions: Iterable[PartitionMetadata] = ()) -> tuple[list[BrokerStatus], int | None,
                                                                            str | None]:
        """Every broker known (live or remembered), the controller id and the cluster id."""
        cluster = self.admin.describe_cluster()
        referenced = {replica for partition in partitions for replica in partition.replicas}
        statuses = self.registry.observe(cluster.nodes, referenced, int(self._clock() * 1000))
        return statuses, cluster.controller.node_id if cluster.controller else None, cluster.cluster_id

    def overview(self) -> ClusterOverview:
        partitions = self._all_partitions(internal=True)
        brokers, controller_id, cluster_id = self.brokers(partitions)
        min_isr = self._min_isr({partition.topic for partition in partitions})
        views = [_view(partition, min_isr.get(partition.topic, 1)) for partition in partitions]
        leaders: dict[int, int] = {}
        replicas: dict[int, int] = {}
        for partition in partitions:
            if partition.leader >= 0:
                leaders[partition.leader] = leaders.get(partition.leader, 0) + 1
            for replica in partition.replicas:
                replicas[replica] = replicas.get(replica, 0) + 1
        quorum, quorum_error = None, None
        try:
            quorum = self.admin.describe_metadata_quorum()
        except KafkaException as error:
            quorum_error = str(error)
        troubled = sorted((view for view in views if view.health.state != PartitionState.ONLINE),
                          key=lambda view: (-_severity(view), view.topic, view.partition))
        return ClusterOverview(cluster_id, controller_id, brokers, leaders, replicas, quorum, quorum_error,
                               count(view.health for view in views), troubled,
                               len({partition.topic for partition in partitions}))

    # topics

    def topics(self) -> list[TopicSummary]:
        listings = self.admin.list_topics(internal=True)
        partitions = self._partitions_of(list(listings))
        self.brokers(partitions)
        min_isr = self._min_isr(set(listings))
        starts, ends = self._offsets([TopicPartition(p.topic, p.partition) for p in partitions])
        sizes = self._sizes()
        by_topic: dict[str, list[PartitionMetadata]] = {name: [] for name in listings}
        for partition in partitions:
            by_topic[partition.topic].append(partition)
        summaries = []
        for name, listing in listings.items():
            parts = by_topic[name]
            tps = [TopicPartition(name, p.partition) for p in parts]
            summaries.append(TopicSummary(
                name=name, internal=listing.is_internal, partitions=len(parts),
                replication_factor=max((len(p.replicas) for p in parts), default=0),
                counts=count(partition_health(p.leader, p.replicas, p.isr, min_isr.get(name, 1)) for p in parts),
                size=_sum_known(sizes.get(tp) for tp in tps) if sizes is not None else None,
                messages=_sum_known(ends[tp] - starts[tp] if tp in ends and tp in starts else None for tp in tps)))
        return summaries

    def topic(self, name: str) -> TopicDetail:
        """Raises KafkaException (UNKNOWN_TOPIC_OR_PARTITION) for a topic the cluster lacks."""
        description = self.admin.describe_topics([name])[name]
        if isinstance(description, KafkaException):
            raise description
        self.brokers(description.partitions)
        resource = ConfigResource(ResourceType.TOPIC, name)
        configs = self.admin.describe_configs([resource])[resource]
        entries = [] if isinstance(configs, KafkaException) else sorted(configs.values(), key=lambda e: e.name)
        min_isr = _int_config(configs.get(MIN_ISR) if isinstance(configs, dict) else None)
        tps = [TopicPartition(name, p.partition) for p in description.partitions]
        starts, ends = self._offsets(tps)
        sizes = self._sizes() or {}
        views = [_view(p, min_isr, starts.get(tp), ends.get(tp), sizes.get(tp))
                 for p, tp in zip(description.partitions, tps)]
        return TopicDetail(name, str(description.topic_id) if description.topic_id else None,
                           description.is_internal, views, entries, count(view.health for view in views))

    def await_topic(self, name: str, timeout_s: float, poll_s: float = 0.1) -> bool:
        """Whether a topic just created is described with a leader for every partition within
        `timeout_s`: CreateTopics answers once the controller has it, the brokers learn it a
        moment later, and the page that follows should find it."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.admin.describe_topics([name])[name]
            if not isinstance(found, KafkaException) and found.partitions and \
                    all(partition.leader >= 0 for partition in found.partitions):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)

    # groups

    def groups(self) -> list[GroupSummary]:
        listings = self.admin.list_consumer_groups()
        if not listings:
            return []
        descriptions = self.admin.describe_consumer_groups([listing.group_id for listing in listings])
        summaries = []
        for listing in listings:
            description = descriptions[listing.group_id]
            if isinstance(description, KafkaException):
                summaries.append(GroupSummary(listing.group_id, f"unknown ({description.name})", "", 0, None))
                continue
            lag = self.lag_rows(description)
            summaries.append(GroupSummary(listing.group_id, description.state, description.protocol,
                                          len(description.members),
                                          sum(row.lag for row in lag if row.lag is not None)))
        return summaries

    def group(self, group_id: str) -> GroupDetail:
        """Raises KafkaException for a group the cluster cannot describe; a group that does not
        exist comes back in state Dead, as Kafka's DescribeGroups answers."""
        description = self.admin.describe_consumer_groups([group_id])[group_id]
        if isinstance(description, KafkaException):
            raise description
        return GroupDetail(description, self.lag_rows(description))

    def lag_rows(self, description: ConsumerGroupDescription) -> list[LagRow]:
        """Committed offset, log end and lag per partition, as `consumer-groups --describe` has them."""
        committed = self.committed(description.group_id)
        owners = {tp: member for member in description.members for tp in (member.assignment or [])}
        partitions = sorted(set(committed) | set(owners))
        _, ends = self._offsets(partitions, earliest=False)
        rows = []
        for tp in partitions:
            current, end = committed.get(tp), ends.get(tp)
            member = owners.get(tp)
            rows.append(LagRow(tp.topic, tp.partition, current, end,
                               end - current if current is not None and end is not None else None,
                               member.member_id if member else None, member.client_host if member else None,
                               member.client_id if member else None))
        return rows

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        offsets = self.admin.list_consumer_group_offsets(group_id)
        return {TopicPartition(*tp): offset.offset for tp, offset in offsets.items()
                if not isinstance(offset, KafkaException) and offset.offset >= 0}

    def offsets(self, partitions: list[TopicPartition], spec: OffsetSpec) -> dict[TopicPartition, int]:
        """Offsets by ListOffsets; a partition whose lookup failed (e.g. no leader) is left out."""
        if not partitions:
            return {}
        listed = self.admin.list_offsets({tp: spec for tp in partitions})
        return {TopicPartition(*tp): result.offset for tp, result in listed.items()
                if isinstance(result, ListedOffset) and result.offset >= 0}

    # helpers

    def _all_partitions(self, internal: bool) -> list[PartitionMetadata]:
        return self._partitions_of(list(self.admin.list_topics(internal=internal)))

    def _partitions_of(self, names: list[str]) -> list[PartitionMetadata]:
        if not names:
            return []
        found = [d for d in self.admin.describe_topics(names).values() if not isinstance(d, KafkaException)]
        return [partition for description in found for partition in description.partitions]

    def _offsets(self, partitions: list[TopicPartition], earliest: bool = True,
                 ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        starts = self.offsets(partitions, OffsetSpec.earliest()) if earliest else {}
        return starts, self.offsets(partitions, OffsetSpec.latest())

    def _min_isr(self, topics: set[str]) -> dict[str, int]:
        if not topics:
            return {}
        resources = [ConfigResource(ResourceType.TOPIC, name) for name in sorted(topics)]
        result = {}
        for resource, configs in self.admin.describe_configs(resources).items():
            if isinstance(configs, dict):
                result[resource.name] = _int_config(configs.get(MIN_ISR))
        return result

    def _sizes(self) -> dict[TopicPartition, int] | None:
        """Bytes of each partition: its largest replica (the leader's, unless a follower is ahead
        of a trimmed leader). None when no broker answered DescribeLogDirs."""
        try:
            per_broker = self.admin.describe_log_dirs()
        except KafkaException:
            return None
        sizes: dict[TopicPartition, int] = {}
        answered = False
        for dirs in per_broker.values():
            if isinstance(dirs, KafkaException):
                continue
            answered = True
            for description in dirs.values():
                _add_sizes(sizes, description)
        return sizes if answered else None


def _add_sizes(sizes: dict[TopicPartition, int], description: LogDirDescription) -> None:
    for tp, info in description.replica_infos.items():
        if not info.is_future:
            key = TopicPartition(*tp)
            sizes[key] = max(sizes.get(key, 0), info.size)


def _view(partition: PartitionMetadata, min_isr: int, start: int | None = None, end: int | None = None,
          size: int | None = None) -> PartitionView:
    return PartitionView(partition.topic, partition.partition, partition.leader, tuple(partition.replicas),
                         tuple(partition.isr), tuple(partition.offline_replicas),
                         partition_health(partition.leader, partition.replicas, partition.isr, min_isr),
                         start, end, size)


def _severity(view: PartitionView) -> int:
    return list(PartitionState).index(view.health.state)


def _int_config(entry: ConfigEntry | None) -> int:
    try:
        return int(entry.value) if entry is not None and entry.value is not None else 1
    except ValueError:
        return 1


def _sum_known(values: Iterable[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None
