"""The coordinator's cache and its link to `__consumer_offsets` (Kafka's GroupMetadataManager).

It owns the groups of the partitions this broker leads, knows which partitions are loaded or
still loading, hands out append ids for writes someone waits on, and keeps every timer of the
coordinator in one deadline queue.
"""

from __future__ import annotations

import enum
import itertools
from typing import Callable, Iterable, Mapping, NamedTuple

from gregor.coordinator.append_errors import group_store_error
from gregor.coordinator.config import GroupCoordinatorConfig
from gregor.coordinator.consumer.group import ConsumerGroup
from gregor.coordinator.consumer.records import ConsumerGroupReplay
from gregor.coordinator.deadlines import DeadlineQueue
from gregor.coordinator.effects import AppendRecords, Effect, Record
from gregor.coordinator.group_records import group_metadata_record, group_tombstone, offset_tombstone, replay
from gregor.coordinator.group_state import Group, GroupState
from gregor.coordinator.offset_metadata import OffsetAndMetadata, TopicPartition
from gregor.coordinator.partitioning import partition_for
from gregor.protocol.error_codes import ErrorCode

AppendCallback = Callable[[ErrorCode, int, list[Effect]], None]
"""Called with the append's error, `now_ms` and the effect list to extend."""


class TimerKind(enum.Enum):
    HEARTBEAT = "heartbeat"            # a member's session (or new-member join) timeout
    PENDING_MEMBER = "pending-member"  # a member id handed out with MEMBER_ID_REQUIRED
    JOIN = "join"                      # the end of PreparingRebalance (initial delay or rebalance timeout)
    SYNC = "sync"                      # members that got their JoinGroup answer must SyncGroup by then
    OFFSET_EXPIRATION = "offset-expiration"
    CONSUMER_SESSION = "consumer-session"        # a consumer-protocol member's session
    CONSUMER_REVOCATION = "consumer-revocation"  # a consumer-protocol member's time to revoke


class TimerKey(NamedTuple):
    kind: TimerKind
    group_id: str = ""
    member_id: str = ""


class GroupMetadataManager:
    def __init__(self, config: GroupCoordinatorConfig) -> None:
        self.config = config
        self.groups: dict[str, Group] = {}
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        self.deadlines: DeadlineQueue[TimerKey] = DeadlineQueue()
        self._append_callbacks: dict[int, AppendCallback] = {}
        self._append_ids = itertools.count(1)
        #: A group's GROUP-resource config overrides (KIP-848 GroupConfig), as the broker's
        #: metadata image has them; none by default.
        self.group_config_overrides: Callable[[str], Mapping[str, str]] = lambda _group_id: {}

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def status_error(self, group_id: str, allow_empty_id: bool) -> ErrorCode | None:
        """Kafka's validateGroupStatus: a usable id, loaded, and led by this broker.

        OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups accept the empty group id (for
        old clients and to let admins see and remove it); everything else requires a name.
        """
        if not group_id and not allow_empty_id:
            return ErrorCode.INVALID_GROUP_ID
        partition = self.partition_for(group_id)
        if partition in self.loading_partitions:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned_partitions:
            return ErrorCode.NOT_COORDINATOR
        return None

    def create_group(self, group_id: str, now_ms: int) -> Group:
        group = Group(group_id, GroupState.EMPTY, now_ms)
        self.groups[group_id] = group
        return group

    def remove_group(self, group: Group) -> None:
        """Drop a Dead group from the cache together with all of its timers."""
        self.groups.pop(group.group_id, None)
        group_id = group.group_id
        for kind in (TimerKind.JOIN, TimerKind.SYNC):
            self.deadlines.cancel(TimerKey(kind, group_id))
        for member_id in group.members:
            self.deadlines.cancel(TimerKey(TimerKind.HEARTBEAT, group_id, member_id))
        for member_id in group.pending_members:
            self.deadlines.cancel(TimerKey(TimerKind.PENDING_MEMBER, group_id, member_id))

    # -- writes

    def append(self, group: Group, records: Iterable[Record], now_ms: int,
               on_done: AppendCallback | None) -> AppendRecords:
        """A batch for the group's partition; `on_done` runs when the broker reports the outcome."""
        return self.append_to(group.group_id, records, now_ms, on_done)

    def append_to(self, group_id: str, records: Iterable[Record], now_ms: int,
                  on_done: AppendCallback | None) -> AppendRecords:
        """A batch for the partition of `group_id` (of either protocol)."""
        append_id = None
        if on_done is not None:
            append_id = next(self._append_ids)
            self._append_callbacks[append_id] = on_done
        return AppendRecords(self.partition_for(group_id), tuple(records), now_ms, append_id)

    def store_group(self, group: Group, assignment: Mapping[str, bytes], now_ms: int,
                    on_done: AppendCallback | None) -> AppendRecords:
        """Persist the group's generation; `on_done` sees append errors mapped for group clients."""
        def mapped(error: ErrorCode, done_ms: int, out: list[Effect]) -> None:
            assert on_done is not None
            on_done(group_store_error(error), done_ms, out)

        return self.append(group, (group_metadata_record(group, assignment),), now_ms,
                           None if on_done is None else mapped)

    def append_done(self, append_id: int, error: ErrorCode, now_ms: int) -> list[Effect]:
        out: list[Effect] = []
        callback = self._append_callbacks.pop(append_id, None)
        if callback is not None:
            callback(error, now_ms, out)
        return out

    @property
    def pending_appends(self) -> int:
        return len(self._append_callbacks)

    def cleanup_group(self, group: Group, removed: Mapping[TopicPartition, OffsetAndMetadata], now_ms: int,
                      out: list[Effect]) -> None:
        """Tombstone `removed` offsets; an Empty group left without offsets dies and is dropped.

        Kafka's cleanupGroupMetadata. The group's own tombstone is written only if it ever had a
        generation: a group used only for offset commits never wrote a metadata record.
        """
        if group.state is GroupState.EMPTY and not group.has_offsets:
            group.transition_to(GroupState.DEAD, now_ms)
        records = [offset_tombstone(group.group_id, partition) for partition in removed]
        if group.state is GroupState.DEAD:
            self.remove_group(group)
            if group.generation_id > 0:
                records.append(group_tombstone(group.group_id))
        if records:
            out.append(self.append(group, records, now_ms, None))

    # -- partition ownership

    def begin_load(self, partition: int) -> None:
        self.loading_partitions.add(partition)

    def load(self, partition: int, records: Iterable[tuple[bytes, bytes | None]],
             now_ms: int) -> tuple[list[Group], list[ConsumerGroup]]:
        """The classic and consumer groups of the partition's records, now cached; the caller
        adds the consumer groups (with their timers)."""
        consumer = ConsumerGroupReplay()
        groups = replay(records, now_ms, consumer)
        for group in groups:
            self.groups[group.group_id] = group
        self.loading_partitions.discard(partition)
        self.owned_partitions.add(partition)
        return groups, consumer.finish()

    def release(self, partition: int) -> list[Group]:
        """Stop leading `partition`; returns its groups, still cached, for the caller to unload."""
        self.loading_partitions.discard(partition)
        self.owned_partitions.discard(partition)
        return [group for group_id, group in self.groups.items() if self.partition_for(group_id) == partition]
