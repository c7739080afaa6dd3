"""The broker's side of share groups: membership, share sessions, share-partitions, their timers
and persistence.

The decisions are sans-IO (`gregor.coordinator.share`): `ShareGroupCoordinator` (membership and
assignment, on the group's coordinator), `ShareSessions` and one `SharePartition` per group and
topic-partition this broker leads (Kafka's SharePartitionManager role). This module reads the
logs for them, persists every change of a share-partition through `ShareStateStore` before the
request that made it is answered, wakes the share fetches parked in the consumer fetch purgatory
when records become available again (released, timed out), and keeps two timers: member
sessions and acquisition locks.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Iterator, Mapping

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.config import BrokerConfig
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.services import ControllerGateway, MetadataView, PartitionHost
from gregor.broker.share_group_log import ShareGroupLog
from gregor.broker.share_state_store import ShareStateStore
from gregor.coordinator.partitioning import partition_for
from gregor.coordinator.share.share_group import HeartbeatResult, ShareGroupConfig, ShareGroupCoordinator
from gregor.coordinator.share.share_partition import (
    Acknowledgement, AcquiredRange, SharePartition, SharePartitionConfig, ShareSnapshot,
)
from gregor.coordinator.share.isolation import READ_COMMITTED as READ_COMMITTED_LEVEL
from gregor.coordinator.share.isolation import READ_UNCOMMITTED as READ_UNCOMMITTED_LEVEL
from gregor.coordinator.share.isolation import AbortedRange, LogBatch, undeliverable
from gregor.coordinator.share.share_session import ShareSessions
from gregor.metadata.features import SHARE_VERSION
from gregor.metadata.group_configs import GROUP_RESOURCE, group_int
from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import iter_batches
from gregor.replication.partition import READ_COMMITTED, READ_UNCOMMITTED, Partition

log = logging.getLogger("gregor.share")

OFFSETS_TOPIC = "__consumer_offsets"
ShareKey = tuple[str, str, int]  # group id, topic, partition


@dataclass(frozen=True)
class Acquired:
    """What one partition gave a ShareFetch: the acquired ranges and the record batches holding them."""

    ranges: list[AcquiredRange]
    records: bytes


class ShareRuntime:
    def __init__(self, config: BrokerConfig, metadata: MetadataView, partitions: PartitionHost,
                 controller: ControllerGateway, clock: Clock = wall_clock_ms) -> None:
        self._config = config
        self._metadata = metadata
        self._partitions = partitions
        self._clock = clock
        coordinator = ShareGroupCoordinator(ShareGroupConfig(
            session_timeout_ms=config.get("group.share.session.timeout.ms"),
            heartbeat_interval_ms=config.get("group.share.heartbeat.interval.ms"),
            max_size=config.get("group.share.max.size")))
        coordinator.group_config_overrides = self.group_configs
        self.group_log = ShareGroupLog(config, metadata, partitions, clock, coordinator,
                                       on_loaded=lambda: self._member_timer.arm(coordinator.next_deadline()))
        self.partition_config = SharePartitionConfig(
            lock_duration_ms=config.get("group.share.record.lock.duration.ms"),
            delivery_count_limit=config.get("group.share.delivery.count.limit"),
            max_record_locks=config.get("group.share.partition.max.record.locks"))
        self.sessions = ShareSessions()
        self.store = ShareStateStore(config, metadata, partitions, controller, clock)
        self._shares: dict[ShareKey, tuple[int, SharePartition]] = {}  # (leader epoch it was loaded in, state)
        self._pending: set[asyncio.Future[list[ErrorCode]]] = set()
        self._pending_writes: set[asyncio.Future[ErrorCode]] = set()
        self._persisted: dict[ShareKey, int] = {}
        self._topic_ids: dict[ShareKey, uuid.UUID] = {}  # the topic each share-partition in memory belongs to
        self._member_timer = DeadlineTimer(clock, self._expire_members)
        self._lock_timer = DeadlineTimer(clock, self._expire_locks)

    def group_configs(self, group_id: str) -> Mapping[str, str]:
        """The group's GROUP-resource configs as the metadata image has them (KIP-848 GroupConfig)."""
        return self._metadata.image.configs.get((GROUP_RESOURCE, group_id), {})

    def lock_duration_ms(self, group_id: str) -> int:
        """The group's `share.record.lock.duration.ms`, else `group.share.record.lock.duration.ms`."""
        return group_int(self.group_configs(group_id), "share.record.lock.duration.ms",
                         self.partition_config.lock_duration_ms)

    # -- membership (on the group's coordinator)

    @property
    def groups(self) -> ShareGroupCoordinator:
        """The share groups this broker coordinates, loaded from `__consumer_offsets` first where
        it became a coordinator (`ShareGroupLog`)."""
        return self.group_log.synced()

    def persist_group(self, group_id: str) -> asyncio.Future[ErrorCode] | None:
        """Write the group's changed membership to `__consumer_offsets` (None: nothing changed)."""
        return self.group_log.persist(group_id)

    def enabled(self) -> bool:
        """Whether the cluster has share groups on (`share.version` finalized at 1 or more)."""
        return self._metadata.image.features.get(SHARE_VERSION, 0) >= 1

    def coordinator_error(self, group_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR unless this broker leads the `__consumer_offsets` partition of the
        group, as for every group."""
        topic = self._metadata.image.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        registration = topic.partitions.get(partition_for(group_id, len(topic.partitions)))
        if registration is None or registration.leader != self._metadata.node_id:
            return ErrorCode.NOT_COORDINATOR
        return None

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str, client_host: str) -> HeartbeatResult:
        now = self._clock()
        group = self.groups.groups.get(group_id)
        topics = set(subscribed or ()) | ({t for m in group.members.values() for t in m.subscribed} if group else set())
        counts, ids = {}, {}
        for name in topics:
            topic = self._metadata.image.topics.get(name)
            if topic is not None:
                counts[name] = len(topic.partitions)
                ids[name] = topic.topic_id
        result = self.groups.heartbeat(group_id, member_id, member_epoch, rack_id, subscribed, client_id,
                                       client_host, counts, now, ids)
        # A leave does not touch the member's share sessions, as in Kafka: its client closes them
        # with epoch -1 (acknowledging its last records) on another connection, and that request
        # may be handled after this one; its records come back then, or when its connection closes.
        self._member_timer.arm(self.groups.next_deadline())
        return result

    def topic_id(self, name: str) -> uuid.UUID | None:
        topic = self._metadata.image.topics.get(name)
        return None if topic is None else topic.topic_id

    def partition_count(self, name: str) -> int | None:
        topic = self._metadata.image.topics.get(name)
        return None if topic is None else len(topic.partitions)

    def leader_epoch(self, name: str, index: int) -> int:
        registration = self._metadata.image.partition(name, index)
        return -1 if registration is None else registration.leader_epoch

    def _expire_members(self, now_ms: int) -> None:
        expired = self.groups.expire(now_ms)
        for group_id, member_id in expired:
            log.info("share group %s: member %s left (session timed out)", group_id, member_id)
            self.release_member(group_id, member_id)
        for group_id in dict.fromkeys(group_id for group_id, _ in expired):
            self._background_write(self.persist_group(group_id))
        self._background(self.settle())
        self._member_timer.arm(self.groups.next_deadline())

    # -- share-partitions (on the leader of each topic-partition)

    def leader(self, topic: str, index: int) -> tuple[ErrorCode, Partition | None]:
        partition = self._partitions.partition(topic, index)
        if partition is None:
            self._forget_partition(topic, index)
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        if not partition.is_leader:
            self._forget_partition(topic, index)
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
        return ErrorCode.NONE, partition

    def loaded(self, group_id: str, topic: str, partition: Partition) -> SharePartition | None:
        """The group's share-partition of `topic`-`partition` if it is in memory for the
        partition's current leader epoch (else `load` it first)."""
        key = (group_id, topic, partition.index)
        self._drop_if_recreated(key)
        entry = self._shares.get(key)
        if entry is None or entry[0] != partition.leader_epoch:
            return None
        return entry[1]

    def share_partitions(self) -> Iterator[tuple[ShareKey, SharePartition, Partition]]:
        """The share-partitions in memory whose partition this broker still leads (for metrics)."""
        for key, (epoch, share) in list(self._shares.items()):
            partition = self._partitions.partition(key[1], key[2])
            if self._drop_if_recreated(key):
                continue
            if partition is not None and partition.is_leader and partition.leader_epoch == epoch:
                yield key, share, partition

    def holds(self, group_id: str, topic: str, index: int, share: object) -> bool:
        """Whether `share` is still the group's share-partition in memory (not dropped: fenced,
        the partition moved)."""
        entry = self._shares.get((group_id, topic, index))
        return entry is not None and entry[1] is share

    async def load(self, group_id: str, topic: str, partition: Partition) -> SharePartition:
        """The group's share-partition of `topic`-`partition`: as persisted, else new at the
        offset `share.auto.offset.reset` names (latest: the high watermark; earliest: the log
        start). KafkaError when the persisted state cannot be read."""
        key = (group_id, topic, partition.index)
        epoch = partition.leader_epoch
        topic_id = self.topic_id(topic)
        snapshot = await self.store.read((group_id, topic_id, key[2])) if topic_id is not None else None
        found = self.loaded(group_id, topic, partition)
        if found is not None:  # loaded by another request meanwhile
            return found
        if snapshot is not None and snapshot.start_offset >= 0:
            share = SharePartition.from_snapshot(self.partition_config, snapshot)
        else:  # no state, or initialized without a start offset (in its state epoch)
            reset = self.group_configs(group_id).get("share.auto.offset.reset",
                                                     self._config.get("share.auto.offset.reset"))
            earliest = reset == "earliest"
            share = SharePartition(self.partition_config,
                                   partition.log_start_offset if earliest else partition.high_watermark,
                                   snapshot.state_epoch if snapshot is not None else 0)
        share.advance_log_start(partition.log_start_offset)
        self._shares[key] = (epoch, share)
        self._persisted[key] = -1
        if topic_id is not None:
            self._topic_ids[key] = topic_id
        return share

    def acquire(self, group_id: str, member_id: str, topic: str, partition: Partition, max_records: int,
                max_bytes: int) -> Acquired:
        """Acquire up to `max_records` records for the member, read from at most `max_bytes`
        (nothing when the share-partition is not loaded)."""
        share = self.loaded(group_id, topic, partition)
        if share is None:
            return Acquired([], b"")
        share.advance_log_start(partition.log_start_offset)
        committed = self.read_committed(group_id)
        start = share.acquirable_from()
        if start is None or start >= self._readable_end(partition, committed) or max_records <= 0:
            return Acquired([], b"")
        info = partition.read_records(start, max(max_bytes, 0), -1, READ_COMMITTED if committed else READ_UNCOMMITTED,
                                      True)
        data = info.read_bytes()
        batches = [(header, pos) for header, pos in iter_batches(data)]
        offered = undeliverable(
            [LogBatch(h.base_offset, h.last_offset, h.producer_id, h.is_transactional, h.is_control) for h, _ in batches],
            [AbortedRange(t.producer_id, t.first_offset, t.last_offset) for t in info.aborted_transactions or ()],
            committed)
        ranges = share.acquire(member_id, offered, max_records, self._clock(), self.lock_duration_ms(group_id))
        if not ranges:
            return Acquired([], b"")
        first, last = ranges[0].first_offset, ranges[-1].last_offset
        covering = [(h, pos) for h, pos in batches if h.last_offset >= first and h.base_offset <= last]
        begin = covering[0][1]
        end = covering[-1][1] + covering[-1][0].size
        return Acquired(ranges, bytes(data[begin:end]))

    def acknowledge(self, group_id: str, member_id: str, topic: str, partition: Partition,
                    acknowledgements: list[Acknowledgement]) -> ErrorCode:
        share = self.loaded(group_id, topic, partition)
        if share is None:
            return ErrorCode.INVALID_RECORD_STATE  # nothing of it was acquired under this leader
        return share.acknowledge(member_id, acknowledgements, self._clock())

    def can_acquire(self, group_id: str, topic: str, index: int) -> bool:
        """Whether a share fetch parked on this partition would now get records."""
        partition = self._partitions.partition(topic, index)
        if partition is None or not partition.is_leader:
            return True  # answer the fetch: it learns the partition moved
        share = self.loaded(group_id, topic, partition)
        if share is None:
            return True
        start = share.acquirable_from()
        return start is not None and start < self._readable_end(partition, self.read_committed(group_id))

    def read_committed(self, group_id: str) -> bool:
        """Whether the group's `share.isolation.level` is read_committed (default read_uncommitted)."""
        return self.group_configs(group_id).get("share.isolation.level", READ_UNCOMMITTED_LEVEL) == READ_COMMITTED_LEVEL

    @staticmethod
    def _readable_end(partition: Partition, committed: bool) -> int:
        """Where a share group may read to: the last stable offset under read_committed, else the
        high watermark."""
        return partition.last_stable_offset if committed else partition.high_watermark

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member's records on this broker go back to the group (it closed its share session
        here, its connection closed, or its group session expired); `settle` persists it."""
        now = self._clock()
        self.sessions.remove_member(group_id, member_id)
        for (group, _, _), (_, share) in self._shares.items():
            if group == group_id:
                share.release_member(member_id, now)

    def connection_closed(self, connection_id: int) -> None:
        """A client connection closed: the share sessions it carried close, and their members'
        records on this broker go back to the group at once (Kafka 4.1's release on disconnect),
        not when their locks run out."""
        closed = self.sessions.close_connection(connection_id)
        for session in closed:
            log.info("share group %s: member %s's connection closed; its records are released", session.group_id,
                     session.member_id)
            self.release_member(session.group_id, session.member_id)
        if closed:
            self._background(self.settle())

    def settle(self) -> asyncio.Future[list[ErrorCode]] | None:
        """After a change: persist the share-partitions that changed (the writes start now, in
        order; the future, None when there is nothing to write, is done once all are), wake the
        share fetches that can now acquire records, and re-arm the lock timer."""
        writes = []
        for key in [k for k in list(self._shares) if self._drop_if_recreated(k)]:
            self._partitions.consumer_fetches.check(key[1:])
        for key, (_, share) in self._shares.items():
            if self._persisted.get(key) == share.version:
                continue
            self._persisted[key] = share.version
            group_id, topic, index = key
            topic_id = self._topic_ids.get(key)
            if topic_id is not None:
                writes.append(asyncio.ensure_future(self._write(key, (group_id, topic_id, index), share,
                                                                share.snapshot())))
            self._partitions.consumer_fetches.check((topic, index))
        self._arm_locks()
        return asyncio.gather(*writes) if writes else None

    async def _write(self, key: ShareKey, state_key: tuple[str, uuid.UUID, int], share: SharePartition,
                     snapshot: ShareSnapshot) -> ErrorCode:
        error = await self.store.write(state_key, snapshot)
        if error == ErrorCode.FENCED_STATE_EPOCH:
            log.info("share state of group %s on %s-%d was changed by its coordinator (FENCED_STATE_EPOCH); "
                     "it is read again", *key)
            self.forget(key, share)
        elif error:
            log.warning("share state of group %s, topic id %s, partition %d not persisted: %s", *state_key,
                        error.name)
        return error

    def forget(self, key: ShareKey, share: SharePartition | None = None) -> None:
        """Drop the share-partition from memory (the next request reads its state again); with
        `share`, only if it is still that one."""
        entry = self._shares.get(key)
        if entry is not None and (share is None or entry[1] is share):
            del self._shares[key]
            self._persisted.pop(key, None)
            self._topic_ids.pop(key, None)

    def close(self) -> None:
        self._member_timer.cancel()
        self._lock_timer.cancel()
        self.store.close()

    def _background(self, pending: asyncio.Future[list[ErrorCode]] | None) -> None:
        """Writes nobody waits for (lock expiry, a member gone): failures are logged by `_write`."""
        if pending is not None:
            self._pending.add(pending)
            pending.add_done_callback(self._pending.discard)

    def _background_write(self, pending: asyncio.Future[ErrorCode] | None) -> None:
        if pending is not None:
            self._pending_writes.add(pending)
            pending.add_done_callback(self._pending_writes.discard)

    def _forget_partition(self, topic: str, index: int) -> None:
        for key in [k for k in self._shares if k[1] == topic and k[2] == index]:
            self.forget(key)

    def _drop_if_recreated(self, key: ShareKey) -> bool:
        """Drop the share-partition, and tombstone its persisted state, when its topic is gone or
        was deleted and created again under the same name (Kafka keys share state by topic id:
        the new topic starts afresh at `share.auto.offset.reset`); whether it was dropped."""
        old_id = self._topic_ids.get(key)
        if old_id is None or old_id == self.topic_id(key[1]):
            return False
        group_id, topic, index = key
        log.info("share group %s: topic %s (id %s) was deleted; its share state on partition %d is dropped",
                 group_id, topic, old_id, index)
        self.forget(key)
        self._background_write(asyncio.ensure_future(self.store.delete((group_id, old_id, index))))
        return True

    def _arm_locks(self) -> None:
        deadlines = [d for _, share in self._shares.values() if (d := share.next_deadline()) is not None]
        self._lock_timer.arm(min(deadlines) if deadlines else None)

    def _expire_locks(self, now_ms: int) -> None:
        for _, share in self._shares.values():
            share.expire_locks(now_ms)
        self._background(self.settle())
