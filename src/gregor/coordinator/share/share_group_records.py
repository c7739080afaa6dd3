"""Share groups' records of `__consumer_offsets`, byte-compatible with Apache Kafka's.

Kafka's key versions name the record type (each key and value an int16 version, then the struct
at that version; a null value is a tombstone):

    9   ShareGroupPartitionMetadata        the subscribed topics (id, name, partition count)
    10  ShareGroupMemberMetadata           a member's subscription and client details
    11  ShareGroupMetadata                 the group epoch
    12  ShareGroupTargetAssignmentMetadata the assignment epoch
    13  ShareGroupTargetAssignmentMember   a member's target partitions
    14  ShareGroupCurrentMemberAssignment  a member's epochs and current partitions
    15  ShareGroupStatePartitionMetadata   the topics whose partitions may have share state

`group_records` is a group's whole record set; the edge writes the records that differ from what
it wrote last (and tombstones for those that went), so the log's latest records are the group.
`ShareGroupReplay` rebuilds groups from them in log order, as a new coordinator does; members come
back with a fresh session. Topic ids are mapped to names with the caller's metadata; a topic
that no longer exists drops out. Gregor tracks share state per topic: the state partition
metadata lists its topics with an empty partition list, and no deleting topics.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Mapping

from gregor.coordinator.share.share_group import ShareGroup, ShareMember
from gregor.protocol.messages import Message
from gregor.protocol.messages.group_coordinator_records.share_group_current_member_assignment_key import (
    ShareGroupCurrentMemberAssignmentKey as CurrentKey,
)
from gregor.protocol.messages.group_coordinator_records.share_group_current_member_assignment_value import (
    ShareGroupCurrentMemberAssignmentValue as CurrentValue,
)
from gregor.protocol.messages.group_coordinator_records.share_group_member_metadata_key import (
    ShareGroupMemberMetadataKey as MemberKey,
)
from gregor.protocol.messages.group_coordinator_records.share_group_member_metadata_value import (
    ShareGroupMemberMetadataValue as MemberValue,
)
from gregor.protocol.messages.group_coordinator_records.share_group_metadata_key import (
    ShareGroupMetadataKey as GroupKey,
)
from gregor.protocol.messages.group_coordinator_records.share_group_metadata_value import (
    ShareGroupMetadataValue as GroupValue,
)
from gregor.protocol.messages.group_coordinator_records.share_group_partition_metadata_key import (
    ShareGroupPartitionMetadataKey as PartitionKey,
)
from gregor.protocol.messages.group_coordinator_records.share_group_partition_metadata_value import (
    ShareGroupPartitionMetadataValue as PartitionValue,
)
from gregor.protocol.messages.group_coordinator_records.share_group_state_partition_metadata_key import (
    ShareGroupStatePartitionMetadataKey as StateKey,
)
from gregor.protocol.messages.group_coordinator_records.share_group_state_partition_metadata_value import (
    ShareGroupStatePartitionMetadataValue as StateValue,
)
from gregor.protocol.messages.group_coordinator_records.share_group_target_assignment_member_key import (
    ShareGroupTargetAssignmentMemberKey as TargetMemberKey,
)
from gregor.protocol.messages.group_coordinator_records.share_group_target_assignment_member_value import (
    ShareGroupTargetAssignmentMemberValue as TargetMemberValue,
)
from gregor.protocol.messages.group_coordinator_records.share_group_target_assignment_metadata_key import (
    ShareGroupTargetAssignmentMetadataKey as TargetKey,
)
from gregor.protocol.messages.group_coordinator_records.share_group_target_assignment_metadata_value import (
    ShareGroupTargetAssignmentMetadataValue as TargetValue,
)
from gregor.protocol.primitives import Reader

PARTITION_METADATA, MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, \
    STATE_PARTITION_METADATA = range(9, 16)
KEY_VERSIONS = frozenset(range(9, 16))
VALUE_VERSION = 0
STABLE = 0  # MemberState.STABLE: a share member is never reconciling
_VERSION = struct.Struct(">h")
_KEY_TYPES: dict[int, Any] = {PARTITION_METADATA: PartitionKey, MEMBER_METADATA: MemberKey, GROUP_METADATA: GroupKey,
                              TARGET_METADATA: TargetKey, TARGET_MEMBER: TargetMemberKey,
                              CURRENT_ASSIGNMENT: CurrentKey, STATE_PARTITION_METADATA: StateKey}


def _encode(version: int, message: Message) -> bytes:
    return _VERSION.pack(version) + message.encode(version)


def _by_id(assignment: Mapping[str, list[int]], topic_ids: Mapping[str, uuid.UUID]) -> list[tuple[uuid.UUID, list[int]]]:
    return sorted((topic_ids[name], sorted(parts)) for name, parts in assignment.items() if name in topic_ids)


def group_records(group: ShareGroup, topic_ids: Mapping[str, uuid.UUID]) -> dict[bytes, bytes]:
    """Every record of `group` (key bytes to value bytes), topics named by `topic_ids`."""
    group_id = group.group_id
    records = {
        _encode(GROUP_METADATA, GroupKey(group_id=group_id)): _encode(VALUE_VERSION, GroupValue(epoch=group.group_epoch)),
        _encode(PARTITION_METADATA, PartitionKey(group_id=group_id)): _encode(VALUE_VERSION, PartitionValue(topics=[
            PartitionValue.TopicMetadata(topic_id=topic_ids[name], topic_name=name, num_partitions=count)
            for name, count in sorted(group.partition_counts.items()) if name in topic_ids])),
        _encode(TARGET_METADATA, TargetKey(group_id=group_id)):
            _encode(VALUE_VERSION, TargetValue(assignment_epoch=group.assignment_epoch)),
        _encode(STATE_PARTITION_METADATA, StateKey(group_id=group_id)): _encode(VALUE_VERSION, StateValue(
            initialized_topics=[StateValue.TopicPartitionsInfo(topic_id=topic_ids[name], topic_name=name, partitions=[])
                                for name in sorted(group.state_topics) if name in topic_ids],
            deleting_topics=[])),
    }
    for member in group.members.values():
        member_id = member.member_id
        records[_encode(MEMBER_METADATA, MemberKey(group_id=group_id, member_id=member_id))] = _encode(
            VALUE_VERSION, MemberValue(rack_id=member.rack_id, client_id=member.client_id,
                                       client_host=member.client_host,
                                       subscribed_topic_names=sorted(member.subscribed)))
        records[_encode(TARGET_MEMBER, TargetMemberKey(group_id=group_id, member_id=member_id))] = _encode(
            VALUE_VERSION, TargetMemberValue(topic_partitions=[
                TargetMemberValue.TopicPartition(topic_id=topic_id, partitions=parts)
                for topic_id, parts in _by_id(group.target.get(member_id, {}), topic_ids)]))
        records[_encode(CURRENT_ASSIGNMENT, CurrentKey(group_id=group_id, member_id=member_id))] = _encode(
            VALUE_VERSION, CurrentValue(member_epoch=member.member_epoch, previous_member_epoch=member.previous_epoch,
                                        state=STABLE, assigned_partitions=[
                                            CurrentValue.TopicPartitions(topic_id=topic_id, partitions=parts)
                                            for topic_id, parts in _by_id(member.assignment, topic_ids)]))
    return records


_MEMBER_VERSIONS = (CURRENT_ASSIGNMENT, TARGET_MEMBER, MEMBER_METADATA)


def _deletion_order(key: bytes) -> int:
    version = _VERSION.unpack_from(key)[0]
    return 0 if version in _MEMBER_VERSIONS else (2 if version == GROUP_METADATA else 1)


def changes(written: Mapping[bytes, bytes], now: Mapping[bytes, bytes]) -> list[tuple[bytes, bytes | None]]:
    """The records that take the log from `written` to `now`: tombstones first (members' records,
    then the group's, its epoch record last, as Kafka deletes), then the new and changed values."""
    gone = sorted((key for key in written if key not in now), key=_deletion_order)
    return [(key, None) for key in gone] + [(key, value) for key, value in now.items() if written.get(key) != value]


class ShareGroupReplay:
    """Share groups rebuilt from their records, fed one at a time in log order (DecodeError for
    malformed bytes: the caller skips the record)."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[int, Any]] = {}
        self._members: dict[str, dict[str, dict[int, Any]]] = {}

    def apply(self, version: int, key_bytes: bytes, value_bytes: bytes | None) -> None:
        reader = Reader(key_bytes)
        reader.int16()
        key = _KEY_TYPES[version].decode(reader, version)
        value = None
        if value_bytes is not None:
            value_reader = Reader(value_bytes)
            value_version = value_reader.int16()
            value = _VALUE_TYPES[version].decode(value_reader, value_version)
        if version in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT):
            member = self._members.setdefault(key.group_id, {}).setdefault(key.member_id, {})
            if value is None:
                member.pop(version, None)
            else:
                member[version] = value
        elif version == GROUP_METADATA and value is None:
            self._groups.pop(key.group_id, None)
            self._members.pop(key.group_id, None)
        elif value is None:
            self._groups.get(key.group_id, {}).pop(version, None)
        else:
            self._groups.setdefault(key.group_id, {})[version] = value

    def groups(self, topic_names: Mapping[uuid.UUID, str], now_ms: int, session_timeout_ms: int) -> list[ShareGroup]:
        """The groups the records left, their members with a session from `now_ms`."""
        found = []
        for group_id, records in self._groups.items():
            if GROUP_METADATA not in records:
                continue
            group = ShareGroup(group_id, group_epoch=records[GROUP_METADATA].epoch)
            if TARGET_METADATA in records:
                group.assignment_epoch = records[TARGET_METADATA].assignment_epoch
            if PARTITION_METADATA in records:
                group.partition_counts = {t.topic_name: t.num_partitions for t in records[PARTITION_METADATA].topics
                                          if t.topic_id in topic_names}
                group.topic_ids = {t.topic_name: t.topic_id for t in records[PARTITION_METADATA].topics
                                   if t.topic_id in topic_names}
            if STATE_PARTITION_METADATA in records:
                group.state_topics = {t.topic_name for t in records[STATE_PARTITION_METADATA].initialized_topics
                                      if t.topic_id in topic_names}
            for member_id, member_records in self._members.get(group_id, {}).items():
                metadata = member_records.get(MEMBER_METADATA)
                if metadata is None:
                    continue
                current = member_records.get(CURRENT_ASSIGNMENT)
                target = member_records.get(TARGET_MEMBER)
                group.members[member_id] = ShareMember(
                    member_id, current.member_epoch if current else 0, metadata.client_id, metadata.client_host,
                    metadata.rack_id, frozenset(metadata.subscribed_topic_names), now_ms + session_timeout_ms,
                    _by_name(current.assigned_partitions if current else [], topic_names),
                    current.previous_member_epoch if current else -1)
                group.target[member_id] = _by_name(target.topic_partitions if target else [], topic_names)
            found.append(group)
        return found


def _by_name(listed: list[Any], topic_names: Mapping[uuid.UUID, str]) -> dict[str, list[int]]:
    return {topic_names[t.topic_id]: list(t.partitions) for t in listed if t.topic_id in topic_names}


_VALUE_TYPES: dict[int, Any] = {PARTITION_METADATA: PartitionValue, MEMBER_METADATA: MemberValue,
                                GROUP_METADATA: GroupValue, TARGET_METADATA: TargetValue,
                                TARGET_MEMBER: TargetMemberValue, CURRENT_ASSIGNMENT: CurrentValue,
                                STATE_PARTITION_METADATA: StateValue}
