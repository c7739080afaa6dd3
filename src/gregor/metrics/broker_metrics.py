"""The broker's metrics, named as Prometheus' JMX exporter names Kafka's MBeans, so dashboards
and alerts written for Kafka read Gregor unchanged (e.g. kafka.server:type=BrokerTopicMetrics,
name=BytesInPerSec,topic=T becomes kafka_server_brokertopicmetrics_bytesin_total{topic="T"}).

Event metrics (bytes and messages in and out, requests and their latency) are counted where
they happen. State metrics (partitions, logs, the controller, connections,
consumer-group lag) are read from the broker when Prometheus scrapes, on the event loop's thread
(the endpoint runs there), so they are always consistent and cost nothing between scrapes.
Each broker has its own registry, so several brokers can live in one process (tests).
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, Protocol, Sized

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from gregor.broker.events import BrokerEvents
from gregor.protocol.messages import REQUESTS

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def request_name(api_key: int) -> str:
    """Kafka's request name as its RequestMetrics label it (Produce, Fetch, ...)."""
    request_class = REQUESTS.get(api_key)
    return request_class.__name__.removesuffix("Request") if request_class else str(api_key)


class LogView(Protocol):
    """What the state collector reads of a partition's log."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def segments(self) -> Sized: ...

    def size_in_bytes(self) -> int: ...


class PartitionView(Protocol):
    """What the state collector reads of one local partition."""

    @property
    def topic(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def isr(self) -> Sized: ...

    @property
    def replicas(self) -> Sized: ...

    @property
    def log(self) -> LogView: ...


class BrokerState(Protocol):
    """What the state collector reads of the broker."""

    node_id: int

    def metric_partitions(self) -> Iterable[PartitionView]: ...

    def metric_offline_partitions(self) -> int: ...

    def metric_is_active_controller(self) -> bool: ...

    def metric_connections(self) -> int: ...

    def metric_request_queue(self) -> int: ...

    def metric_group_lag(self) -> Iterable[tuple[str, str, int, int]]: ...

    def metric_share_partitions(self) -> Iterable[tuple[str, str, int, int, int, int]]: ...

    def metric_partition_states(self) -> Mapping[str, int]: ...

    def metric_replica_states(self) -> Mapping[str, int]: ...

    def metric_transaction_states(self) -> Mapping[str, int]: ...

    def metric_transaction_outcomes(self) -> Mapping[str, int]: ...


class BrokerMetrics(BrokerEvents):
    """Installed as the broker's `events`, it counts; `watch` adds the state read at scrapes."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.bytes_in = Counter("kafka_server_brokertopicmetrics_bytesin", "Bytes appended by producers, per topic.",
                                ["topic"], registry=registry)
        self.bytes_out = Counter("kafka_server_brokertopicmetrics_bytesout", "Bytes sent to consumers, per topic.",
                                 ["topic"], registry=registry)
        self.messages_in = Counter("kafka_server_brokertopicmetrics_messagesin", "Records appended, per topic.",
                                   ["topic"], registry=registry)
        self.requests = Counter("kafka_network_requestmetrics_requests", "Requests answered, per API.",
                                ["request"], registry=registry)
        self.isr_shrinks = Counter("kafka_server_replicamanager_isrshrinks",
                                   "ISR shrinks of partitions this broker leads.", registry=registry)
        self.isr_expands = Counter("kafka_server_replicamanager_isrexpands",
                                   "ISR expansions of partitions this broker leads.", registry=registry)
        self.request_time = Histogram("kafka_network_requestmetrics_totaltime_seconds",
                                      "From a request's arrival to its response, per API.", ["request"],
                                      buckets=LATENCY_BUCKETS, registry=registry)

    def watch(self, state: BrokerState) -> None:
        """Read the broker's state at every scrape."""
        self.registry.register(_StateCollector(state))

    def request_done(self, api_key: int, seconds: float) -> None:
        name = request_name(api_key)
        self.requests.labels(name).inc()
        self.request_time.labels(name).observe(seconds)

    def produced(self, topic: str, size: int, records: int) -> None:
        self.bytes_in.labels(topic).inc(size)
        self.messages_in.labels(topic).inc(records)

    def fetched(self, sizes: dict[str, int]) -> None:
        for topic, size in sizes.items():
            if size:
                self.bytes_out.labels(topic).inc(size)

    def isr_changed(self, topic: str, partition: int, before: int, after: int) -> None:
        if after < before:
            self.isr_shrinks.inc()
        elif after > before:
            self.isr_expands.inc()


class _StateCollector(Collector):
    def __init__(self, state: BrokerState) -> None:
        self._state = state

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        state = self._state
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of a partition's log on this broker.", labels=labels)
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "A partition's log start offset.", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "A partition's log end offset.", labels=labels)
        segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments of a partition's log.", labels=labels)
        high_watermark = GaugeMetricFamily("kafka_cluster_partition_highwatermark",
                                           "A partition's high watermark.", labels=labels)
        under = GaugeMetricFamily("kafka_cluster_partition_underreplicated",
                                  "1 when this broker leads the partition and its ISR lacks a replica.", labels=labels)
        under_total = leaders = partitions = 0
        for partition in state.metric_partitions():
            key = [partition.topic, str(partition.index)]
            log = partition.log
            size.add_metric(key, log.size_in_bytes())
            start.add_metric(key, log.log_start_offset)
            end.add_metric(key, log.log_end_offset)
            segments.add_metric(key, len(log.segments))
            high_watermark.add_metric(key, partition.high_watermark)
            partitions += 1
            if partition.is_leader:
                leaders += 1
                lagging = len(partition.isr) < len(partition.replicas)
                under.add_metric(key, 1 if lagging else 0)
                under_total += lagging
        yield from (size, start, end, segments, high_watermark, under)
        yield _gauge("kafka_server_replicamanager_underreplicatedpartitions",
                     "Partitions this broker leads whose ISR lacks a replica.", under_total)
        yield _gauge("kafka_server_replicamanager_partitioncount", "Partitions on this broker.", partitions)
        yield _gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads.", leaders)
        yield _gauge("kafka_controller_kafkacontroller_offlinepartitionscount",
                     "Partitions without a leader.", state.metric_offline_partitions())
        yield _gauge("kafka_controller_kafkacontroller_activecontrollercount",
                     "1 on the active controller.", 1 if state.metric_is_active_controller() else 0)
        yield _gauge("kafka_server_socketservermetrics_connection_count", "Open client connections.",
                     state.metric_connections())
        yield _gauge("kafka_network_requestchannel_requestqueuesize",
                     "Requests read and not answered yet (queued behind an earlier one or waiting).",
                     state.metric_request_queue())
        lag = GaugeMetricFamily("kafka_consumergroup_lag",
                                "High watermark minus the committed offset, per group and partition.",
                                labels=["consumergroup", "topic", "partition"])
        for group, topic, index, value in state.metric_group_lag():
            lag.add_metric([group, topic, str(index)], value)
        yield lag
        yield from _share_partition_families(state.metric_share_partitions())
        for name, documentation, counts in (
                ("gregor_cluster_partitions", "Partitions of the cluster per state of the seed's partition state "
                 "machine (NewPartition, OnlinePartition, OfflinePartition).", state.metric_partition_states()),
                ("gregor_cluster_replicas", "Replicas of the cluster per state of the seed's replica state machine "
                 "(NewReplica, OnlineReplica, OfflineReplica).", state.metric_replica_states())):
            family = GaugeMetricFamily(name, documentation, labels=["state"])
            for state_name, count in sorted(counts.items()):
                family.add_metric([state_name], count)
            yield family
        yield from _transaction_metrics(state)


def _transaction_metrics(state: BrokerState) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
    """The transaction coordinator's, named as the JMX exporter would name an MBean
    kafka.server:type=transaction-coordinator-metrics (the group coordinator's pattern)."""
    prefix = "kafka_server_transaction_coordinator_metrics_"
    count = GaugeMetricFamily(prefix + "transaction_count",
                              "Transactions this broker coordinates, per state.", labels=["state"])
    for state_name, value in sorted(state.metric_transaction_states().items()):
        count.add_metric([state_name], value)
    yield count
    outcomes = state.metric_transaction_outcomes()
    for outcome, documentation in (("committed", "Transactions committed (CompleteCommit written) since start."),
                                   ("aborted", "Transactions aborted (CompleteAbort written) since start, "
                                               "timed-out and fenced ones included."),
                                   ("expired", "Transactional ids removed by transactional.id.expiration.ms "
                                               "since start.")):
        name = "transactional_ids_expired" if outcome == "expired" else f"transactions_{outcome}"
        yield CounterMetricFamily(prefix + name, documentation, value=outcomes.get(outcome, 0))


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _share_partition_families(rows: Iterable[tuple[str, str, int, int, int, int]]) -> Iterator[GaugeMetricFamily]:
    """Share groups' partitions this broker leads (KIP-932): the lag (Gregor's, named as
    `kafka_consumergroup_lag`), and Kafka's SharePartitionMetrics InFlightMessageCount beside the
    records acquired now."""
    labels = ["group", "topic", "partition"]
    lag = GaugeMetricFamily("kafka_sharegroup_lag", "High watermark minus the share-partition start offset, per "
                            "share group and partition.", labels=labels)
    in_flight = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightmessagecount",
                                  "Records tracked between the share-partition start and end offsets.", labels=labels)
    acquired = GaugeMetricFamily("gregor_sharepartition_acquired_records",
                                 "Records delivered to a member, not yet acknowledged or timed out.", labels=labels)
    for group, topic, index, lag_value, in_flight_value, acquired_value in rows:
        key = [group, topic, str(index)]
        lag.add_metric(key, lag_value)
        in_flight.add_metric(key, in_flight_value)
        acquired.add_metric(key, acquired_value)
    yield from (lag, in_flight, acquired)
