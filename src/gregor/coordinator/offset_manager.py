"""Committed offsets of groups: OffsetCommit, OffsetFetch, OffsetDelete and expiration.

Semantics of Kafka's GroupCoordinator.doCommitOffsets / handleDeleteOffsets and
GroupMetadataManager.storeOffsets / getOffsets / cleanupGroupMetadata. A commit becomes visible
only once its records are written: until then it is pending, which OffsetFetch with
require_stable reports as UNSTABLE_OFFSET_COMMIT.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from gregor.coordinator.append_errors import offset_commit_error
from gregor.coordinator.effects import Effect, Respond
from gregor.coordinator.group_metadata_manager import GroupMetadataManager
from gregor.coordinator.group_records import offset_commit_record
from gregor.coordinator.group_state import Group, GroupState
from gregor.coordinator.offset_expiration import expired_offsets
from gregor.coordinator.offset_metadata import OffsetAndMetadata, TopicPartition
from gregor.coordinator.rebalance import Rebalancer
from gregor.coordinator.results import (
    NO_OFFSET,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchResult,
    PartitionOffset,
)
from gregor.protocol.error_codes import ErrorCode

NO_RETENTION_TIME = -1
"""OffsetCommit's retention_time_ms default: keep the offset per offsets.retention.minutes."""

CommitOffsets = Mapping[TopicPartition, tuple[int, int, str | None]]
"""(topic, partition) -> (offset, leader epoch or -1, metadata or None)."""

_NO_COMMITTED_OFFSET = PartitionOffset(NO_OFFSET, -1, "", ErrorCode.NONE)


def java_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units, the unit of offset.metadata.max.bytes in Kafka."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class OffsetManager:
    def __init__(self, manager: GroupMetadataManager, rebalancer: Rebalancer) -> None:
        self._manager = manager
        self._rebalancer = rebalancer
        self._config = manager.config

    def commit(self, token: object, group: Group | None, group_id: str, generation_id: int, member_id: str,
               group_instance_id: str | None, retention_time_ms: int, offsets: CommitOffsets, now_ms: int,
               out: list[Effect]) -> None:
        """Validate a commit against the group and write it; the answer comes when it is written.

        A commit with a negative generation to a missing group creates it Empty: consumers that
        assign partitions themselves use Kafka only to store offsets.
        """
        def reject(error: ErrorCode) -> None:
            out.append(Respond(token, OffsetCommitResult({partition: error for partition in offsets})))

        if group is None:
            if generation_id >= 0:
                return reject(ErrorCode.ILLEGAL_GENERATION)
            group = self._manager.create_group(group_id, now_ms)
        error = self._validate(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return reject(error)
        if group.state is GroupState.COMPLETING_REBALANCE:
            # A member of the new generation committing before it has its assignment.
            return reject(ErrorCode.REBALANCE_IN_PROGRESS)
        if group.state is not GroupState.EMPTY:
            # Stable, or PreparingRebalance where the heartbeat answer tells it to rejoin.
            self._rebalancer.schedule_heartbeat(group, group.members[member_id], now_ms)
        self.store(token, group, retention_time_ms, offsets, now_ms, out)

    @staticmethod
    def _validate(group: Group, generation_id: int, member_id: str,
                  group_instance_id: str | None) -> ErrorCode | None:
        if generation_id < 0 and group.state is GroupState.EMPTY:
            return None
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = group.member_error(member_id, group_instance_id)
            if error is None and generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            return error
        # Only members may commit to a group with members.
        return ErrorCode.UNKNOWN_MEMBER_ID

    def store(self, token: object, group: Group, retention_time_ms: int, offsets: CommitOffsets, now_ms: int,
              out: list[Effect]) -> None:
        """Write a validated commit; the answer comes once it is written."""
        expire_ms = None if retention_time_ms == NO_RETENTION_TIME else now_ms + retention_time_ms
        max_bytes = self._config.offset_metadata_max_bytes
        too_large = set()
        valid: dict[TopicPartition, OffsetAndMetadata] = {}
        for partition, (offset, leader_epoch, metadata) in offsets.items():
            if metadata is not None and java_length(metadata) > max_bytes:
                too_large.add(partition)
            else:
                valid[partition] = OffsetAndMetadata(offset, leader_epoch, metadata or "", now_ms, expire_ms)

        def answer(error: ErrorCode, target: list[Effect]) -> None:
            errors = {partition: ErrorCode.OFFSET_METADATA_TOO_LARGE if partition in too_large else error
                      for partition in offsets}
            target.append(Respond(token, OffsetCommitResult(errors)))

        if not valid:
            return answer(ErrorCode.OFFSET_METADATA_TOO_LARGE, out)

        def written(error: ErrorCode, done_ms: int, done_out: list[Effect]) -> None:
            if group.state is not GroupState.DEAD:
                for partition, offset in valid.items():
                    if error is ErrorCode.NONE:
                        group.on_offset_commit_append(partition, offset)
                    else:
                        group.fail_pending_offset_write(partition, offset)
            answer(offset_commit_error(error), done_out)

        group.prepare_offset_commit(valid)
        records = [offset_commit_record(group.group_id, partition, offset) for partition, offset in valid.items()]
        out.append(self._manager.append(group, records, now_ms, written))

    @staticmethod
    def fetch(group: Group | None, partitions: Iterable[TopicPartition] | None,
              require_stable: bool) -> OffsetFetchResult:
        """Offsets regardless of the group's state: groups may use Kafka only to store offsets."""
        if group is None:
            return OffsetFetchResult(ErrorCode.NONE,
                                     {partition: _NO_COMMITTED_OFFSET for partition in partitions or ()})
        result = {}
        for partition in (group.offsets if partitions is None else partitions):
            if require_stable and partition in group.pending_offset_commits:
                result[partition] = PartitionOffset(NO_OFFSET, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
            elif (offset := group.offsets.get(partition)) is not None:
                result[partition] = PartitionOffset(offset.offset, offset.leader_epoch, offset.metadata, ErrorCode.NONE)
            else:
                result[partition] = _NO_COMMITTED_OFFSET
        return OffsetFetchResult(ErrorCode.NONE, result)

    def delete(self, group: Group | None, partitions: Iterable[TopicPartition], now_ms: int,
               out: list[Effect]) -> OffsetDeleteResult:
        """OffsetDelete: offsets of topics a consumer group still subscribes to are kept."""
        if group is None:
            return OffsetDeleteResult(ErrorCode.GROUP_ID_NOT_FOUND)
        partitions = list(dict.fromkeys(partitions))
        errors: dict[TopicPartition, ErrorCode] = {}
        if group.state is GroupState.EMPTY:
            eligible = partitions
        elif group.is_consumer_group:
            eligible = []
            for partition in partitions:
                if group.is_subscribed_to_topic(partition[0]):
                    errors[partition] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(partition)
        else:
            return OffsetDeleteResult(ErrorCode.NON_EMPTY_GROUP)
        if eligible:
            self._manager.cleanup_group(group, group.remove_offsets(eligible), now_ms, out)
            errors.update((partition, ErrorCode.NONE) for partition in eligible)
        return OffsetDeleteResult(ErrorCode.NONE, errors)

    def forget_partitions(self, partitions: Iterable[TopicPartition], now_ms: int, out: list[Effect]) -> None:
        """Deleted topic partitions: every group's offsets for them are tombstoned."""
        partitions = list(partitions)
        for group in list(self._manager.groups.values()):
            self._manager.cleanup_group(group, group.remove_offsets(partitions), now_ms, out)

    def expire(self, now_ms: int, out: list[Effect]) -> None:
        """The periodic sweep: expired offsets are tombstoned, groups left with nothing dropped."""
        retention_ms = self._config.offsets_retention_ms
        consumer_groups = self._manager.consumer_groups
        for group in list(self._manager.groups.values()):
            expired = expired_offsets(group, now_ms, retention_ms)
            consumer_group = consumer_groups.get(group.group_id)
            if consumer_group is not None and expired:
                # A consumer group's offsets of topics its members subscribe to never expire.
                subscribed = consumer_group.subscription_metadata
                expired = [partition for partition in expired if partition[0] not in subscribed]
            removed = group.remove_offsets(expired)
            self._manager.cleanup_group(group, removed, now_ms, out)
