"""The broker process: wires storage, the metadata log, the controller and the network edge.

Single-node mode runs broker and controller in one process over a one-voter metadata quorum:
every topic or config change is decided by the controller, appended to `__cluster_metadata`,
replayed into a new metadata image, and only then applied to local partition logs. A restart
replays the same log, so the image it builds is the one the broker had.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import time
import uuid
from typing import Any, Iterable

from gregor.broker.config import BROKER_CONFIG_KEYS, BrokerConfig, Endpoint
from gregor.broker.dispatcher import Dispatcher
from gregor.broker.network import KafkaServer
from gregor.controller.controller import Outcome, QuorumController, topic_name_error
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import MetadataImage
from gregor.metadata.topic_configs import effective_topic_config
from gregor.raft.metadata_log import METADATA_TOPIC, MetadataLog
from gregor.replication.partition import Partition
from gregor.replication.waiters import PartitionWaiters
from gregor.storage.log import LogConfig
from gregor.storage.log_manager import LogManager

log = logging.getLogger("gregor.broker")

META_PROPERTIES = "meta.properties"
MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
HOUSEKEEPING_INTERVAL_S = 1.0


def now_ms() -> int:
    return int(time.time() * 1000)


class AdvertisedEndpoint:
    __slots__ = ("host", "port", "rack")

    def __init__(self, host: str, port: int, rack: str | None) -> None:
        self.host = host
        self.port = port
        self.rack = rack


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.controller_id = config.node_id
        self.image = MetadataImage()
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.fetch_waiters = PartitionWaiters()
        self.controller = QuorumController()
        self.max_uncompressed_bytes = MAX_UNCOMPRESSED_BYTES
        self.bound_ports: dict[str, int] = {}
        self._server: KafkaServer | None = None
        self._housekeeping: asyncio.Task | None = None
        self.logs: LogManager | None = None
        self.metadata_log: MetadataLog | None = None
        self._producer_ids = iter(())

    # -- lifecycle

    async def start(self) -> None:
        start = now_ms()
        cluster_id = self._cluster_id()
        self.metadata_log = MetadataLog(self.config.metadata_log_dir, self.node_id, start)
        delta = MetadataDelta(MetadataImage(cluster_id=cluster_id))
        for offset, record in self.metadata_log.read_committed():
            delta.replay(record, offset)
        self.image = delta.apply()
        self.logs = LogManager(self.config.log_dirs, start)
        configs = {}
        for name in self.image.topics:
            for index in self.image.topics[name].partitions:
                configs[(name, index)] = self.log_config(name)
        self.logs.load(configs, self.log_config(None), start, skip=frozenset({f"{METADATA_TOPIC}-0"}))
        if not self.logs.clean_shutdown:
            log.info("previous shutdown was not clean: logs recovered from their recovery points")
        self._server = KafkaServer(Dispatcher(self), self.config.get("socket.request.max.bytes"))
        for endpoint in self.config.client_listeners():
            port = await self._server.listen(endpoint.listener, endpoint.host, endpoint.port)
            self.bound_ports[endpoint.listener] = port
        self._commit(self.controller.register_broker(
            self.image, self.node_id,
            [(e.listener, e.host, self._advertised_port(e)) for e in self.config.advertised_client_listeners()],
            self.config.get("broker.rack")))
        self._sync_all_partitions(start)
        self._housekeeping = asyncio.ensure_future(self._housekeeping_loop())
        listeners = ", ".join(f"{e.listener}://{e.host}:{self.bound_ports[e.listener]}"
                              for e in self.config.client_listeners())
        log.info("broker %d started: cluster %s, listening on %s, %d partition(s), data in %s",
                 self.node_id, cluster_id, listeners, len(self.partitions), ", ".join(self.config.log_dirs))

    def _advertised_port(self, endpoint: Endpoint) -> int:
        if endpoint.port == 0:
            return self.bound_ports.get(endpoint.listener, 0)
        return endpoint.port

    async def stop(self) -> None:
        log.info("broker %d shutting down", self.node_id)
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        if self._server is not None:
            await self._server.close()
        stop = now_ms()
        if self.logs is not None:
            self.logs.shutdown(stop)
        if self.metadata_log is not None:
            self.metadata_log.close()
        log.info("broker %d stopped cleanly", self.node_id)

    def _cluster_id(self) -> str:
        """The cluster id from meta.properties, generated on first start as Kafka's storage tool does."""
        cluster_id = self.config.get("cluster.id")
        found = None
        for directory in self.config.log_dirs:
            path = os.path.join(directory, META_PROPERTIES)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as handle:
                    for line in handle:
                        key, _, value = line.strip().partition("=")
                        if key == "cluster.id":
                            found = value
        cluster_id = found or cluster_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        for directory in self.config.log_dirs:
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, META_PROPERTIES)
            if not os.path.exists(path):
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(f"version=1\nnode.id={self.node_id}\ncluster.id={cluster_id}\n")
        return cluster_id

    async def _housekeeping_loop(self) -> None:
        retention_every = self.config.get("log.retention.check.interval.ms")
        checkpoint_every = self.config.get("log.flush.offset.checkpoint.interval.ms")
        last_retention = last_checkpoint = now_ms()
        while True:
            await asyncio.sleep(HOUSEKEEPING_INTERVAL_S if retention_every >= 1000 else retention_every / 1000)
            current = now_ms()
            try:
                self.logs.flush_dirty(current)
                if current - last_retention >= retention_every:
                    last_retention = current
                    self.logs.cleanup(current)
                if current - last_checkpoint >= checkpoint_every:
                    last_checkpoint = current
                    self.logs.checkpoint()
            except OSError:
                log.exception("housekeeping failed; will retry")

    # -- metadata

    def _commit(self, records: list[Any]) -> None:
        """Append controller records to the metadata log, replay them, apply the new image."""
        if not records:
            return
        current = now_ms()
        last = self.metadata_log.append(records, current)
        delta = MetadataDelta(self.image)
        first = last - len(records) + 1
        for offset, record in enumerate(records, first):
            delta.replay(record, offset)
        self.image = delta.apply()
        for name in delta.deleted_topics.values():
            self._remove_topic(name)
        for topic_id in delta.changed_topics:
            topic = self.image.topics_by_id.get(topic_id)
            if topic is not None:
                self._sync_topic(topic.name, current)

    def commit_outcome(self, outcome: Outcome) -> Outcome:
        if outcome.records:
            self._commit(outcome.records)
        return outcome

    def _sync_all_partitions(self, current: int) -> None:
        for name in self.image.topics:
            self._sync_topic(name, current)
        for name, index in list(self.logs.logs):
            topic = self.image.topics.get(name)
            if topic is None or index not in topic.partitions:
                log.info("deleting %s-%d: not in the metadata", name, index)
                self.logs.delete_log(name, index)

    def _sync_topic(self, name: str, current: int) -> None:
        topic = self.image.topics[name]
        config = self.log_config(name)
        for index, registration in topic.partitions.items():
            if self.node_id not in registration.replicas:
                continue
            partition = self.partitions.get((name, index))
            if partition is None:
                partition_log = self.logs.create_log(name, index, config, current)
                self.partitions[(name, index)] = Partition(
                    name, index, topic.topic_id, partition_log, registration.leader_epoch,
                    list(registration.replicas), list(registration.isr), self._high_watermark_moved)
            else:
                partition.log.update_config(config)
                partition.leader_epoch = registration.leader_epoch

    def _remove_topic(self, name: str) -> None:
        for key in [k for k in self.partitions if k[0] == name]:
            del self.partitions[key]
            self.logs.delete_log(*key)
            self.fetch_waiters.notify(key)

    def _high_watermark_moved(self, partition: Partition) -> None:
        self.fetch_waiters.notify((partition.topic, partition.index))

    def log_config(self, topic: str | None) -> LogConfig:
        overrides = self.image.topic_config(topic) if topic else {}
        values = effective_topic_config(overrides, self.config.topic_defaults())
        return LogConfig.from_properties({k: v for k, (v, _) in values.items()})

    # -- what handlers use

    def partition(self, topic: str | None, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

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
            for endpoint in registration.endpoints:
                if endpoint.listener == listener:
                    yield broker_id, AdvertisedEndpoint(endpoint.host, endpoint.port, registration.rack)

    def auto_create_topics(self, names: list[str], current: int) -> None:
        for name in names:
            if self.is_valid_topic_name(name) and name not in self.image.topics:
                outcome = self.create_topic(name, -1, -1, {}, {})
                if outcome.error:
                    log.warning("auto-creating topic %s failed: %s", name, outcome.message)
                else:
                    log.info("auto-created topic %s", name)

    def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                     assignments: dict[int, list[int]], configs: dict[str, str | None],
                     validate_only: bool = False) -> Outcome:
        outcome = self.controller.create_topic(
            self.image, name, num_partitions, replication_factor, assignments, configs,
            self.config.get("num.partitions"), self.config.get("default.replication.factor"))
        if outcome.error or validate_only:
            return outcome
        return self.commit_outcome(outcome)

    def next_producer_id(self) -> int:
        """A fresh producer id from this broker's block, allocating a new block when it runs out."""
        producer_id = next(self._producer_ids, None)
        if producer_id is None:
            registration = self.image.brokers.get(self.node_id)
            outcome = self.commit_outcome(self.controller.allocate_producer_ids(
                self.image, self.node_id, registration.epoch if registration else 0))
            self._producer_ids = iter(range(outcome.value, self.image.next_producer_id))
            producer_id = next(self._producer_ids)
        return producer_id

    @property
    def broker_config_keys(self) -> frozenset[str]:
        return frozenset(BROKER_CONFIG_KEYS)
