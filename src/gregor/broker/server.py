"""The broker process: wires storage, the metadata, replication and the network edge.

This is the composition root, imported by nothing but the `gregor server` command (an import
contract in tests/unit/test_layering.py keeps it so). `Broker` implements two of the narrow
services of `gregor.broker.services` (PartitionHost, MetadataView), `ControllerClient` the third
(ControllerGateway), and each handler and component gets only those it uses: the client
listener's handlers a `BrokerContext` with them, ReplicaManager and GroupRuntime theirs.

Every broker reaches the metadata the same way, whatever the deployment: it registers with the
active controller and heartbeats (`broker_lifecycle`), sends it the changes clients ask for
(`handlers/forward`) and its own requests (AlterPartition, AllocateProducerIds, CreateTopics for
auto-creation) through a `ControllerChannel`, and applies each committed metadata image to its
partition logs (`on_metadata_update`), only after it has caught up with the quorum's committed
log once, so a restart never mistakes a stale image for deleted topics.

Where the images come from depends on the node's roles:

- the embedded single node (`process.roles=broker,controller`, at most one voter): a
  ControllerServer in this process is the one voter of the quorum; the broker takes its images
  from it and reaches it through the channel in process (a `LocalConnection`), not a socket;
- a combined node (`broker,controller` in a quorum of several voters): the same, but the active
  controller may be another voter, reached over sockets;
- a broker-only node (`process.roles=broker`): copies the metadata log as a raft observer
  (`metadata_observer`) and hosts replicas of partitions led elsewhere, fetching from their
  leaders (`replica_manager`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial
import uuid
from typing import Iterable, Iterator, Mapping, Sequence

from gregor.broker.broker_lifecycle import BrokerLifecycle
from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.config import SECURITY_PROTOCOLS, BrokerConfig
from gregor.broker.config import Endpoint as ListenerEndpoint
from gregor.broker.controller_channel import ControllerChannel, LocalConnection
from gregor.broker.controller_client import ControllerClient
from gregor.broker.controller_server import ControllerServer
from gregor.broker.dispatcher import Dispatcher
from gregor.broker.events import BrokerEvents
from gregor.broker.fetch_purgatory import FetchPurgatory
from gregor.broker.group_runtime import GroupRuntime
from gregor.broker.handlers import BrokerContext, BrokerServices, client_handlers
from gregor.broker.meta_properties import ensure_cluster_id
from gregor.broker.metadata_observer import MetadataObserver
from gregor.broker.network import KafkaServer
from gregor.broker.replica_manager import ReplicaManager, replication_config
from gregor.broker.services import AdvertisedEndpoint
from gregor.controller.operations import Endpoint
from gregor.controller.replication_control import partition_state, replica_state
from gregor.controller.topic_names import topic_name_error
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from gregor.metadata.topic_configs import ConfigEntry, describe_topic_config, effective_topic_config
from gregor.protocol.messages.broker_registration import BrokerRegistrationRequest
from gregor.raft.client import RaftClient
from gregor.raft.storage_log import METADATA_PARTITION_DIR
from gregor.replication.effects import Effect
from gregor.replication.partition import Partition
from gregor.storage.dir_lock import DirectoryLocks
from gregor.storage.cleaning import CleanerConfig, CleaningAborted
from gregor.storage.log import Log
from gregor.storage.log_config import LogConfig
from gregor.storage.log_manager import LogManager

log = logging.getLogger("gregor.broker")

MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
HOUSEKEEPING_INTERVAL_S = 1.0
SHUTDOWN_GRACE_S = 5.0  # requests already read get this long to be answered at shutdown
CONTROLLED_SHUTDOWN_S = 30.0


class Broker:
    """A metadata publisher: each committed image is applied to the local partition logs. It
    implements `PartitionHost` and `MetadataView` (`gregor.broker.services`); `controller` (a
    ControllerClient) is its ControllerGateway. `events` receives what the broker reports as it
    serves (the metrics, when they are on)."""

    def __init__(self, config: BrokerConfig, events: BrokerEvents | None = None, clock: Clock = wall_clock_ms) -> None:
        self.config = config
        self.clock = clock
        self.events = events if events is not None else BrokerEvents()
        self.node_id = config.node_id
        self.controller_id = config.node_id
        self.image = MetadataImage()
        self.partitions: dict[tuple[str, int], Partition] = {}
        # consumers wait for the high watermark to move, followers for records to be appended
        # (a follower reads up to the log end; the high watermark reaches it with its next fetch)
        self.consumer_fetches = FetchPurgatory(clock)
        self.replica_fetches = FetchPurgatory(clock)
        self.max_uncompressed_bytes = MAX_UNCOMPRESSED_BYTES
        self.bound_ports: dict[str, int] = {}
        self._server: KafkaServer | None = None
        self._housekeeping: asyncio.Task[None] | None = None
        self._cleaners: list[asyncio.Task[None]] = []
        self._cleaner_pool: ThreadPoolExecutor | None = None
        self.logs: LogManager | None = None
        self.observer: MetadataObserver | None = None
        self.controller_server: ControllerServer | None = None
        self.lifecycle: BrokerLifecycle | None = None
        self.controller_channel: ControllerChannel | None = None
        self.controller = ControllerClient(self)
        self.replicas = ReplicaManager(replication_config(config), self.partitions, self, self.controller, self.events,
                                       clock)
        self.groups = GroupRuntime(config, self, self, self.controller, clock)
        self._synced = False
        self._locks = DirectoryLocks([*config.log_dirs, config.metadata_log_dir])

    # -- lifecycle

    @property
    def runs_controller(self) -> bool:
        """A voter runs in this process (the embedded single node, or a combined node)."""
        return "controller" in self.config.process_roles

    async def start(self) -> None:
        """Lock the data directories and bind the listeners before anything reads or writes data
        there: a second broker on the same directories or ports exits leaving them untouched."""
        self._locks.acquire()
        try:
            await self._start()
        except BaseException:
            self._locks.release()
            raise

    async def _start(self) -> None:
        services = BrokerServices(partitions=self, metadata=self, controller=self.controller, groups=self.groups,
                                  metrics=self.events)
        server = self._server = KafkaServer(
            Dispatcher(client_handlers(), partial(BrokerContext, services), self.clock,
                       on_request=self.events.request_done),
            self.config.get("socket.request.max.bytes"), self.config.connection_limits())
        for endpoint in self.config.client_listeners():
            port = await server.listen(endpoint.listener, endpoint.host, endpoint.port, start_serving=False)
            self.bound_ports[endpoint.listener] = port
        start = self.clock()
        cluster_id = self._cluster_id()
        source: ControllerServer | MetadataObserver
        if self.runs_controller:
            source = self.controller_server = ControllerServer(self.config, lock_dirs=False, clock=self.clock)
            await source.start()
            self.image = await source.caught_up()
        else:
            source = self.observer = MetadataObserver(self.config, cluster_id, self.clock)
            log.info("broker %d: catching up with the metadata quorum %s", self.node_id,
                     ",".join(f"{node}@{host}:{port}" for node, (host, port) in self.config.quorum_voters().items()))
            self.image = await source.start()
        logs = self.logs = LogManager(self.config.log_dirs, self.log_config(None), start,
                                      {name: self.log_config(name) for name in self.image.topics},
                                      skip=frozenset({METADATA_PARTITION_DIR}), cleaner_config=self._cleaner_config())
        if logs.logs and not logs.clean_shutdown:
            log.info("previous shutdown was not clean: logs recovered from their recovery points")
        elif logs.logs:
            log.info("previous shutdown was clean: %d log(s) loaded without recovery", len(logs.logs))
        self.replicas.start()
        source.install(self)
        endpoints = [Endpoint(e.listener, e.host, self._advertised_port(e), self._security_protocol(e.listener))
                     for e in self.config.advertised_client_listeners()]
        await self._join_cluster(cluster_id, endpoints, source.raft)
        await server.start_serving()
        self._housekeeping = asyncio.ensure_future(self._housekeeping_loop())
        if self.config.get("log.cleaner.enable"):
            self._cleaners = [asyncio.ensure_future(self._cleaner_loop())
                              for _ in range(self.config.get("log.cleaner.threads"))]
        listeners = ", ".join(f"{e.listener}://{e.host}:{self.bound_ports[e.listener]}"
                              for e in self.config.client_listeners())
        log.info("broker %d started: cluster %s, listening on %s, %d partition(s), data in %s",
                 self.node_id, cluster_id, listeners, len(self.partitions), ", ".join(self.config.log_dirs))

    async def _join_cluster(self, cluster_id: str, endpoints: list[Endpoint], raft: RaftClient) -> None:
        """Register with the active controller; it unfences this broker once its heartbeats show
        the metadata caught up (partition leaderships come only then)."""
        settings = dict(leader_hint=lambda: raft.leader_id,
                        request_timeout_ms=self.config.get("controller.quorum.request.timeout.ms"),
                        retry_backoff_ms=self.config.get("controller.quorum.retry.backoff.ms"))
        if self.config.embedded and self.controller_server is not None:
            self.controller_channel = ControllerChannel(
                {self.node_id: LocalConnection(self.controller_server.dispatcher, self.node_id)},
                f"broker-{self.node_id}", **settings)
        else:
            self.controller_channel = ControllerChannel.over_sockets(self.config.quorum_voters(),
                                                                     f"broker-{self.node_id}", **settings)
        self.controller.channel = self.controller_channel
        listeners = [BrokerRegistrationRequest.Listener(name=e.listener, host=e.host, port=e.port,
                                                        security_protocol=e.security_protocol) for e in endpoints]
        self.lifecycle = BrokerLifecycle(self.controller_channel, self.node_id, cluster_id, listeners,
                                         self.config.get("broker.rack"), lambda: self.image.highest_offset,
                                         self.config.get("broker.heartbeat.interval.ms"))
        self.lifecycle.start()
        epoch = await self.lifecycle.registered()
        log.info("broker %d registered in cluster %s (broker epoch %d); waiting to be unfenced", self.node_id,
                 cluster_id, epoch)
        await self.lifecycle.unfenced()

    def _security_protocol(self, listener: str) -> int:
        return SECURITY_PROTOCOLS[self.config.security_protocol(listener)]

    def _advertised_port(self, endpoint: ListenerEndpoint) -> int:
        if endpoint.port == 0:
            return self.bound_ports.get(endpoint.listener, 0)
        return endpoint.port

    async def stop(self) -> None:
        log.info("broker %d shutting down", self.node_id)
        if self.lifecycle is not None:
            await self.lifecycle.controlled_shutdown(CONTROLLED_SHUTDOWN_S)
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        for cleaner in self._cleaners:
            cleaner.cancel()
        if self._cleaner_pool is not None:
            self._cleaner_pool.shutdown(wait=True, cancel_futures=True)
        if self._server is not None:
            await self._server.close(grace_s=SHUTDOWN_GRACE_S)
        await self.replicas.close()
        self.groups.close()
        if self.logs is not None:
            self.logs.shutdown(self.clock())
        if self.observer is not None:
            await self.observer.close()
        if self.lifecycle is not None:
            await self.lifecycle.close()
        if self.controller_server is not None:
            await self.controller_server.stop()
        self._locks.release()
        log.info("broker %d stopped cleanly", self.node_id)

    def _cluster_id(self) -> str:
        """The data's cluster id; only the embedded single node may make one up (the nodes of a
        larger cluster must share the one in their `cluster.id`)."""
        return ensure_cluster_id(self.config.log_dirs, self.node_id, self.config.get("cluster.id"),
                                 may_generate=self.config.embedded)

    def _loaded_logs(self) -> LogManager:
        """The partition logs, loaded in `start` before anything that reads or writes them runs."""
        if self.logs is None:
            raise RuntimeError(f"broker {self.node_id} has not loaded its logs")
        return self.logs

    async def _housekeeping_loop(self) -> None:
        logs = self._loaded_logs()
        retention_every = self.config.get("log.retention.check.interval.ms")
        checkpoint_every = self.config.get("log.flush.offset.checkpoint.interval.ms")
        high_watermarks_every = self.config.get("replica.high.watermark.checkpoint.interval.ms")
        last_retention = last_checkpoint = last_high_watermarks = self.clock()
        while True:
            await asyncio.sleep(HOUSEKEEPING_INTERVAL_S if retention_every >= 1000 else retention_every / 1000)
            current = self.clock()
            try:
                logs.flush_dirty(current)
                if current - last_retention >= retention_every:
                    last_retention = current
                    logs.cleanup(current)
                if current - last_checkpoint >= checkpoint_every:
                    last_checkpoint = last_high_watermarks = current
                    logs.checkpoint()
                elif current - last_high_watermarks >= high_watermarks_every:
                    last_high_watermarks = current
                    logs.checkpoint_high_watermarks()
            except OSError:
                log.exception("housekeeping failed; will retry")

    def _cleaner_config(self) -> CleanerConfig:
        threads = self.config.get("log.cleaner.threads")
        return CleanerConfig(dedupe_buffer_size=self.config.get("log.cleaner.dedupe.buffer.size") // threads,
                             dedupe_buffer_load_factor=self.config.get("log.cleaner.io.buffer.load.factor"),
                             io_buffer_size=self.config.get("log.cleaner.io.buffer.size") // threads)

    async def _cleaner_loop(self) -> None:
        """One cleaner thread's worth of compaction: the key map and rewrite run on a worker
        thread; choosing the log and swapping segments in happen here, on the loop."""
        if self._cleaner_pool is None:
            self._cleaner_pool = ThreadPoolExecutor(self.config.get("log.cleaner.threads"),
                                                    thread_name_prefix="log-cleaner")
        loop = asyncio.get_running_loop()
        logs = self._loaded_logs()
        backoff = self.config.get("log.cleaner.backoff.ms") / 1000
        while True:
            task = logs.begin_cleaning(self.clock())
            if task is None:
                await asyncio.sleep(backoff)
                continue
            try:
                await loop.run_in_executor(self._cleaner_pool, task.run)
            except CleaningAborted:
                pass
            except Exception as error:  # noqa: BLE001 - finish_cleaning marks the log uncleanable
                log.warning("cleaning %s-%d failed; the log is not cleaned again until restart: %s",
                            task.log.topic, task.log.partition, error)
            finally:
                try:
                    logs.finish_cleaning(task, self.clock())
                except OSError:
                    log.exception("swapping cleaned segments of %s-%d failed", task.log.topic, task.log.partition)

    # -- metadata

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Bring local partitions in line with a newly committed image."""
        previous, self.image = self.image, image
        current = self.clock()
        if not self._synced:
            self._synced = True
            self._sync_all_partitions(current)
            self.groups.sync_leadership()
            return
        deleted = delta.deleted_topics()
        for name in deleted.values():
            self._remove_topic(name)
        if deleted:
            self.groups.forget_partitions([(topic.name, index) for topic_id in deleted
                                           if (topic := previous.topics_by_id.get(topic_id)) is not None
                                           for index in topic.partitions])
        for (name, index) in delta.changed_partitions():
            self._sync_partition(name, index, current)
        if delta.changed_partitions() or delta.deleted_topics():
            self.groups.sync_leadership()
        changed = delta.changed_configs()
        if any(resource_type == BROKER_RESOURCE for resource_type, _ in changed):
            topics: Iterable[str] = image.topics
        else:
            topics = [name for resource_type, name in changed if resource_type == TOPIC_RESOURCE]
        for name in topics:
            config = self.log_config(name)
            for key, partition in self.partitions.items():
                if key[0] == name:
                    partition.log.update_config(config)

    def _sync_all_partitions(self, current: int) -> None:
        logs = self._loaded_logs()
        for name, topic in self.image.topics.items():
            for index in topic.partitions:
                self._sync_partition(name, index, current)
        for name, index in list(logs.logs):
            if self.image.partition(name, index) is None:
                log.info("deleting %s-%d: not in the metadata", name, index)
                self.partitions.pop((name, index), None)
                logs.delete_log(name, index)

    def _sync_partition(self, name: str, index: int, current: int) -> None:
        logs = self._loaded_logs()
        topic = self.image.topics[name]
        registration = topic.partitions[index]
        if self.node_id not in registration.replicas:
            if logs.get_log(name, index) is not None:  # reassigned away: delete it, as Kafka's StopReplica
                if (gone := self.partitions.pop((name, index), None)) is not None:
                    self.replicas.apply(gone, gone.stop(current))
                logs.delete_log(name, index)
            return
        partition = self.partitions.get((name, index))
        if partition is None:
            partition_log = logs.create_log(name, index, self.log_config(name), current)
            partition = self.partitions[(name, index)] = Partition(
                name, index, topic.topic_id, partition_log, self.node_id, self.replicas.config,
                on_high_watermark=self._high_watermark_moved,
                high_watermark=logs.checkpointed_high_watermark(name, index))
        was_leader, epoch = partition.is_leader, partition.leader_epoch
        self.replicas.apply(partition, partition.apply_registration(registration, current))
        if partition.leader_epoch != epoch or partition.is_leader != was_leader:
            log.info("%s-%d: %s in leader epoch %d (%s, replicas %s, ISR %s)", name, index,
                     "leader" if partition.is_leader else f"follower of {partition.leader_id}",
                     partition.leader_epoch, partition_state(registration).value, list(registration.replicas),
                     list(registration.isr))
            self._wake_fetches((name, index))

    def _remove_topic(self, name: str) -> None:
        for key in [k for k in self.partitions if k[0] == name]:
            gone = self.partitions.pop(key)
            self.replicas.apply(gone, gone.stop(self.clock()))
            self._loaded_logs().delete_log(*key)
            self._wake_fetches(key)

    def _wake_fetches(self, key: tuple[str, int]) -> None:
        """The partition changed leader or went: every fetch parked on it is answered again."""
        self.consumer_fetches.notify(key)
        self.replica_fetches.notify(key)

    def _high_watermark_moved(self, partition: Partition) -> None:
        self.consumer_fetches.notify((partition.topic, partition.index))

    def topic_config_entries(self, topic: str) -> list[ConfigEntry]:
        """The DescribeConfigs rows of a topic: every key with its value, source and synonyms."""
        return describe_topic_config(self.image.topic_config(topic), self.config.originals,
                                     self.image.broker_config(self.node_id), self.image.broker_config(""))

    def log_config(self, topic: str | None) -> LogConfig:
        overrides = self.image.topic_config(topic) if topic else {}
        values = effective_topic_config(overrides, self.config.originals,
                                        self.image.broker_config(self.node_id), self.image.broker_config(""))
        base = LogConfig(producer_id_expiration_ms=self.config.get("producer.id.expiration.ms"))
        return LogConfig.from_properties(values, base)

    # -- what the metrics read at a scrape

    def metric_partitions(self) -> Iterable[Partition]:
        return self.partitions.values()

    def metric_offline_partitions(self) -> int:
        return sum(1 for topic in self.image.topics.values() for partition in topic.partitions.values()
                   if not partition.has_leader)

    def metric_partition_states(self) -> dict[str, int]:
        states = Counter(partition_state(registration).value for topic in self.image.topics.values()
                         for registration in topic.partitions.values())
        return dict(states)

    def metric_replica_states(self) -> dict[str, int]:
        states = Counter(replica_state(self.image, replica).value for topic in self.image.topics.values()
                         for registration in topic.partitions.values() for replica in registration.replicas)
        return dict(states)

    def metric_is_active_controller(self) -> bool:
        return self.controller_server is not None and self.controller_server.raft.is_leader

    def metric_connections(self) -> int:
        return len(self._server.connections) if self._server is not None else 0

    def metric_request_queue(self) -> int:
        return sum(connection.queued for connection in self._server.connections) if self._server is not None else 0

    def metric_group_lag(self) -> Iterator[tuple[str, str, int, int]]:
        coordinator = self.groups.coordinator
        for group_id in list(coordinator.groups):
            fetched = coordinator.fetch_offsets(group_id=group_id, partitions=None, require_stable=False, now_ms=0)
            for (topic, index), committed in fetched.partitions.items():
                partition = self.partitions.get((topic, index))
                if partition is not None and committed.offset >= 0:
                    yield group_id, topic, index, max(partition.high_watermark - committed.offset, 0)

    # -- PartitionHost

    def partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def apply(self, partition: Partition, effects: Iterable[Effect]) -> None:
        self.replicas.apply(partition, effects)

    def log_dirs(self) -> Sequence[str]:
        return self.config.log_dirs

    def logs_in(self, directory: str) -> Mapping[tuple[str, int], Log]:
        return self.logs.logs_in(directory) if self.logs is not None else {}

    def on_leader_append(self, partition: Partition) -> None:
        """Records were appended as leader: wake the followers waiting in a fetch for them."""
        if partition.remote:
            self.replica_fetches.notify((partition.topic, partition.index))

    # -- MetadataView

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self.image.topics_by_id.get(topic_id)
        return topic.name if topic else None

    @staticmethod
    def is_valid_topic_name(name: str) -> bool:
        return topic_name_error(name) is None

    def endpoints_for(self, listener: str) -> Iterable[tuple[int, AdvertisedEndpoint]]:
        for broker_id, registration in sorted(self.image.brokers.items()):
            if registration.fenced:
                continue
            endpoint = registration.endpoint(listener)
            if endpoint is not None:
                yield broker_id, AdvertisedEndpoint(endpoint.host, endpoint.port, registration.rack)

    @property
    def broker_epoch(self) -> int:
        """This broker's registration epoch."""
        return self.lifecycle.broker_epoch if self.lifecycle is not None else -1

    def replica_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        """Where followers reach broker `broker_id`: its registered inter-broker listener."""
        registration = self.image.brokers.get(broker_id)
        endpoint = registration.endpoint(self.config.inter_broker_listener) if registration else None
        return (endpoint.host, endpoint.port) if endpoint else None
