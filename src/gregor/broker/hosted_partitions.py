"""The partitions this broker hosts: the `PartitionHost` service (Kafka's ReplicaManager role).

It owns the map of hosted `Partition`s and their logs (a `LogManager`, loaded once the metadata
has caught up), the two fetch purgatories, and the `ReplicaManager` that carries out the
partitions' effects (fetcher links, AlterPartition, acks=all answers). The metadata publisher
hands it each committed image's changes: a partition this broker is a replica of is created or
told its new leader, ISR and epochs (`sync_partition`); one reassigned away or deleted is
stopped and its log deleted, as Kafka's StopReplica; changed topic configs reach the logs.

It wakes what waits on a partition: followers' fetches when records are appended as leader,
consumers' fetches when the high watermark moves (those it gives enough bytes), both when the
partition changes leader or goes.
"""

from __future__ import annotations

import logging
from typing import Collection, Hashable, Iterable, Mapping, Sequence

from gregor.broker.broker_metadata import log_config
from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.config import BrokerConfig
from gregor.broker.events import BrokerEvents
from gregor.broker.fetch_purgatory import FetchPurgatory
from gregor.broker.replica_manager import ReplicaManager, replication_config
from gregor.broker.services import ControllerGateway, MetadataView
from gregor.controller.replication_control import partition_state
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from gregor.raft.storage_log import METADATA_PARTITION_DIR
from gregor.replication.effects import Effect
from gregor.replication.fetch_sessions import FetchSessions
from gregor.replication.partition import Partition
from gregor.storage.cleaning import CleanerConfig
from gregor.storage.log import Log
from gregor.storage.log_manager import LogManager

log = logging.getLogger("gregor.broker")

MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
Key = tuple[str, int]


class HostedPartitions:
    def __init__(self, config: BrokerConfig, metadata: MetadataView, controller: ControllerGateway,
                 events: BrokerEvents, clock: Clock = wall_clock_ms) -> None:
        self._config = config
        self._metadata = metadata
        self._clock = clock
        self.partitions: dict[Key, Partition] = {}
        # consumers wait for the high watermark to move, followers for records to be appended
        # (a follower reads up to the log end; the high watermark reaches it with its next fetch)
        self.consumer_fetches = FetchPurgatory(clock)
        self.replica_fetches = FetchPurgatory(clock)
        self.fetch_sessions = FetchSessions()
        self.max_uncompressed_bytes = MAX_UNCOMPRESSED_BYTES
        self.replicas = ReplicaManager(replication_config(config), self.partitions, metadata, controller, events,
                                       clock)
        self.logs: LogManager | None = None

    # -- lifecycle

    def load_logs(self, cleaner_config: CleanerConfig) -> LogManager:
        """Open every partition log of the log dirs, with the committed image's topic configs."""
        image = self._metadata.image
        logs = self.logs = LogManager(self._config.log_dirs, log_config(self._metadata, None), self._clock(),
                                      {name: log_config(self._metadata, name) for name in image.topics},
                                      skip=frozenset({METADATA_PARTITION_DIR}), cleaner_config=cleaner_config)
        if logs.logs and not logs.clean_shutdown:
            log.info("previous shutdown was not clean: logs recovered from their recovery points")
        elif logs.logs:
            log.info("previous shutdown was clean: %d log(s) loaded without recovery", len(logs.logs))
        return logs

    def start(self) -> None:
        self.replicas.start()

    async def close(self) -> None:
        """Stop replicating, then close the logs cleanly (checkpoints and the clean-shutdown marker)."""
        await self.replicas.close()
        if self.logs is not None:
            self.logs.shutdown(self._clock())

    def _loaded_logs(self) -> LogManager:
        """The partition logs, loaded in `load_logs` before anything that reads or writes them runs."""
        if self.logs is None:
            raise RuntimeError(f"broker {self._metadata.node_id} has not loaded its logs")
        return self.logs

    # -- the committed metadata, applied (Kafka's ReplicaManager.applyDelta)

    def sync_all(self, now_ms: int) -> None:
        """Every partition of the image, and the logs of partitions it no longer has deleted."""
        logs = self._loaded_logs()
        for name, topic in self._metadata.image.topics.items():
            for index in topic.partitions:
                self.sync_partition(name, index, now_ms)
        for name, index in list(logs.logs):
            if self._metadata.image.partition(name, index) is None:
                log.info("deleting %s-%d: not in the metadata", name, index)
                self._stop_hosting((name, index), now_ms)

    def sync_partition(self, name: str, index: int, now_ms: int) -> None:
        """Bring one partition of the image in line: host it as leader or follower, or stop
        hosting it when this broker is no longer one of its replicas."""
        logs = self._loaded_logs()
        topic = self._metadata.image.topics[name]
        registration = topic.partitions[index]
        if self._metadata.node_id not in registration.replicas:
            if logs.get_log(name, index) is not None:  # reassigned away
                self._stop_hosting((name, index), now_ms)
            return
        partition = self.partitions.get((name, index))
        if partition is None:
            partition_log = logs.create_log(name, index, log_config(self._metadata, name), now_ms)
            partition = self.partitions[(name, index)] = Partition(
                name, index, topic.topic_id, partition_log, self._metadata.node_id, self.replicas.config,
                on_high_watermark=self._high_watermark_moved,
                high_watermark=logs.checkpointed_high_watermark(name, index))
        was_leader, epoch = partition.is_leader, partition.leader_epoch
        self.replicas.apply(partition, partition.apply_registration(registration, now_ms))
        if partition.leader_epoch != epoch or partition.is_leader != was_leader:
            log.info("%s-%d: %s in leader epoch %d (%s, replicas %s, ISR %s)", name, index,
                     "leader" if partition.is_leader else f"follower of {partition.leader_id}",
                     partition.leader_epoch, partition_state(registration).value, list(registration.replicas),
                     list(registration.isr))
            self._wake_fetches(partition)

    def remove_topic(self, name: str, now_ms: int) -> None:
        """A deleted topic: its partitions stop and their logs go."""
        for key in [k for k in self.partitions if k[0] == name]:
            self._stop_hosting(key, now_ms)

    def _stop_hosting(self, key: Key, now_ms: int) -> None:
        """A partition this broker hosts no more (deleted, reassigned away, or not in the metadata
        at all), as Kafka's StopReplica: it stops, the fetches waiting on it are answered, its log
        is deleted."""
        gone = self.partitions.pop(key, None)
        if gone is not None:
            self.replicas.apply(gone, gone.stop(now_ms))
            self._wake_fetches(gone)
        self._loaded_logs().delete_log(*key)

    def update_log_configs(self, changed: Collection[tuple[int, str]]) -> None:
        """Configs changed (resource type, name): a broker's reach every topic's logs."""
        if any(resource_type == BROKER_RESOURCE for resource_type, _ in changed):
            topics: Iterable[str] = self._metadata.image.topics
        else:
            topics = [name for resource_type, name in changed if resource_type == TOPIC_RESOURCE]
        for name in topics:
            config = log_config(self._metadata, name)
            for key, partition in self.partitions.items():
                if key[0] == name:
                    partition.log.update_config(config)

    # -- wake-ups

    def _wake_fetches(self, partition: Partition) -> None:
        """The partition changed leader or went: every fetch parked on it is answered again,
        followers' in the fetch sessions it rested in too."""
        self.consumer_fetches.wake(partition.key)
        for key in _follower_keys(partition):
            self.replica_fetches.wake(key)

    def answer_due_fetches(self) -> None:
        """Serve the fetches the step that just ended made due (the dispatcher's `step_done`),
        followers' first: an acks=all produce waits for their next fetch."""
        while self.replica_fetches.answer_due() | self.consumer_fetches.answer_due():
            pass

    def _high_watermark_moved(self, partition: Partition) -> None:
        """Consumers' fetches parked on the partition that now have enough bytes are due."""
        self.consumer_fetches.check(partition.key)

    # -- PartitionHost

    def partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def apply(self, partition: Partition, effects: Iterable[Effect]) -> None:
        self.replicas.apply(partition, effects)

    def on_leader_append(self, partition: Partition, effects: Iterable[Effect] | None = None) -> None:
        """Records were appended as leader, with `effects` when the appender waits for them (an
        acks=all produce): wake the followers waiting in a fetch for them, and carry out the
        effects and take the partition's new deadline (its followers are measured against the
        new log end) in one step."""
        if partition.remote:
            for key in _follower_keys(partition):
                self.replica_fetches.check(key)
        if effects is not None:
            self.replicas.apply(partition, effects)
        elif partition.remote:
            self.replicas.reschedule(partition)

    def log_dirs(self) -> Sequence[str]:
        return self._config.log_dirs

    def logs_in(self, directory: str) -> Mapping[Key, Log]:
        return self.logs.logs_in(directory) if self.logs is not None else {}


def _follower_keys(partition: Partition) -> list[Hashable]:
    """What followers' fetches parked on the partition wait under: its key, and the keys of the
    fetch sessions it rested in when it last changed (`Partition.take_woken_sessions`)."""
    return [partition.key, *partition.take_woken_sessions()]
