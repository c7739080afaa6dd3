"""Share groups' membership kept in `__consumer_offsets`, so a coordinator failover keeps them.

The edge of `ShareGroupCoordinator`'s persistence, as Kafka's group coordinator does it: each
group is written to the `__consumer_offsets` partition that coordinates it, as Kafka's ShareGroup*
records (`coordinator.share.share_group_records`), acks=all, the records that changed since the
last write only. A broker that becomes the leader of such a partition (or leads it in a new
leader epoch) replays its records before it serves the groups there (`synced`, called before
any use of the groups), and drops the groups of partitions it no longer leads; replayed members
get a fresh session, as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Callable

from gregor.broker.clock import Clock
from gregor.broker.config import BrokerConfig
from gregor.broker.group_runtime import log_records
from gregor.broker.services import MetadataView, PartitionHost
from gregor.coordinator.partitioning import partition_for
from gregor.coordinator.share import share_group_records as records
from gregor.coordinator.share.share_group import ShareGroupCoordinator
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import DecodeError, KafkaError
from gregor.records.record import BatchBuilder
from gregor.storage.log import Log

log = logging.getLogger("gregor.share")

OFFSETS_TOPIC = "__consumer_offsets"


class ShareGroupLog:
    def __init__(self, config: BrokerConfig, metadata: MetadataView, partitions: PartitionHost, clock: Clock,
                 coordinator: ShareGroupCoordinator, on_loaded: Callable[[], None]) -> None:
        """`on_loaded` is called after groups were replayed (their members' sessions need a timer)."""
        self._on_loaded = on_loaded
        self._config = config
        self._metadata = metadata
        self._partitions = partitions
        self._clock = clock
        self._coordinator = coordinator
        self._written: dict[str, dict[bytes, bytes]] = {}
        self._loaded: dict[int, int] = {}  # __consumer_offsets partition -> the leader epoch it was replayed in
        self._synced_image: object = None

    def synced(self) -> ShareGroupCoordinator:
        """The coordinator, with the groups of every `__consumer_offsets` partition this broker
        leads loaded and those of partitions it lost dropped."""
        image = self._metadata.image
        if image is self._synced_image:
            return self._coordinator
        topic = image.topics.get(OFFSETS_TOPIC)
        count = len(topic.partitions) if topic is not None else 0
        led = {} if topic is None else {index: registration.leader_epoch
                                        for index, registration in topic.partitions.items()
                                        if registration.leader == self._metadata.node_id}
        for index in [index for index, epoch in self._loaded.items() if led.get(index) != epoch]:
            del self._loaded[index]
            self._drop(index, count)
        complete = True
        for index, epoch in led.items():
            if self._loaded.get(index) == epoch:
                continue
            partition = self._partitions.partition(OFFSETS_TOPIC, index)
            if partition is None or not partition.is_leader or partition.leader_epoch != epoch:
                complete = False  # not hosted as leader yet: the next call loads it
                continue
            self._drop(index, count)
            self._replay(index, partition.log)
            self._loaded[index] = epoch
        if complete:
            self._synced_image = image
        return self._coordinator

    def persist(self, group_id: str) -> asyncio.Future[ErrorCode] | None:
        """Write what changed of the group (all of it gone: tombstones) to its partition, acks=all;
        None when nothing changed. The future holds the write's error, if any."""
        group = self._coordinator.groups.get(group_id)
        now = records.group_records(group, self._topic_ids()) if group is not None else {}
        changed = records.changes(self._written.get(group_id, {}), now)
        if not changed:
            return None
        if now:
            self._written[group_id] = now
        else:
            self._written.pop(group_id, None)
        done: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        topic = self._metadata.image.topics.get(OFFSETS_TOPIC)
        partition = None if topic is None else self._partitions.partition(
            OFFSETS_TOPIC, partition_for(group_id, len(topic.partitions)))
        if partition is None or not partition.is_leader:
            done.set_result(ErrorCode.NOT_COORDINATOR)
            return done
        builder = BatchBuilder()
        for key, value in changed:
            builder.append(self._clock(), key, value)
        try:
            info = partition.append_as_leader(memoryview(builder.build()), self._clock(), -1)
        except KafkaError as error:
            log.warning("writing share group %s to %s-%d failed: %s", group_id, OFFSETS_TOPIC, partition.index, error)
            done.set_result(ErrorCode(error.code))
            return done
        self._partitions.on_leader_append(partition, partition.await_replication(
            info, done, self._clock(), self._config.get("offsets.commit.timeout.ms")))
        return done

    def _topic_ids(self) -> dict[str, uuid.UUID]:
        return {name: topic.topic_id for name, topic in self._metadata.image.topics.items()}

    def _drop(self, index: int, count: int) -> None:
        for group_id in [g for g in self._coordinator.groups if count and partition_for(g, count) == index]:
            del self._coordinator.groups[group_id]
            self._written.pop(group_id, None)

    def _replay(self, index: int, partition_log: Log) -> None:
        replay = records.ShareGroupReplay()
        for key, value in log_records(partition_log):
            version = int.from_bytes(key[:2], "big", signed=True)
            if version not in records.KEY_VERSIONS:
                continue
            try:
                replay.apply(version, key, value)
            except DecodeError as error:
                log.warning("skipping a malformed share group record of %s-%d: %s", OFFSETS_TOPIC, index, error)
        names = {topic.topic_id: name for name, topic in self._metadata.image.topics.items()}
        ids = self._topic_ids()
        for group in replay.groups(names, self._clock(), self._coordinator.config.session_timeout_ms):
            self._coordinator.groups[group.group_id] = group
            self._written[group.group_id] = records.group_records(group, ids)
        loaded = [g for g in self._coordinator.groups
                  if partition_for(g, len(self._metadata.image.topics[OFFSETS_TOPIC].partitions)) == index]
        if loaded:
            log.info("loaded %d share group(s) from %s-%d", len(loaded), OFFSETS_TOPIC, index)
            self._on_loaded()
