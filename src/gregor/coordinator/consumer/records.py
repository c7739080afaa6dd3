"""Consumer-group records of `__consumer_offsets`, byte-compatible with Apache Kafka.

Kafka's key versions name the record type (each key and value is an int16 version, then the
struct at that version; a null value is a tombstone):

    3  ConsumerGroupMetadata                 the group epoch
    4  ConsumerGroupPartitionMetadata        the subscribed topics (id, name, partition count)
    5  ConsumerGroupMemberMetadata           a member's subscription and client details
    6  ConsumerGroupTargetAssignmentMetadata the assignment epoch
    7  ConsumerGroupTargetAssignmentMember   a member's target partitions
    8  ConsumerGroupCurrentMemberAssignment  a member's epochs, state and current partitions

`ConsumerGroupReplay` rebuilds groups from them in log order, as Kafka's coordinator replays
them on loading a partition.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Callable, Iterable, Mapping

from gregor.coordinator.consumer.assignment import Assignment, normalized
from gregor.coordinator.consumer.group import ConsumerGroup, TopicInfo
from gregor.coordinator.consumer.member import ClassicMemberInfo, ConsumerGroupMember, MemberState
from gregor.coordinator.effects import Record
from gregor.protocol.messages.group_coordinator_records.consumer_group_current_member_assignment_key import (
    ConsumerGroupCurrentMemberAssignmentKey as CurrentAssignmentKey,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_current_member_assignment_value import (
    ConsumerGroupCurrentMemberAssignmentValue as CurrentAssignmentValue,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_member_metadata_key import (
    ConsumerGroupMemberMetadataKey as MemberMetadataKey,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_member_metadata_value import (
    ConsumerGroupMemberMetadataValue as MemberMetadataValue,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_metadata_key import (
    ConsumerGroupMetadataKey as GroupMetadataKey,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_metadata_value import (
    ConsumerGroupMetadataValue as GroupMetadataValue,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_partition_metadata_key import (
    ConsumerGroupPartitionMetadataKey as PartitionMetadataKey,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_partition_metadata_value import (
    ConsumerGroupPartitionMetadataValue as PartitionMetadataValue,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_target_assignment_member_key import (
    ConsumerGroupTargetAssignmentMemberKey as TargetMemberKey,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_target_assignment_member_value import (
    ConsumerGroupTargetAssignmentMemberValue as TargetMemberValue,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_target_assignment_metadata_key import (
    ConsumerGroupTargetAssignmentMetadataKey as TargetMetadataKey,
)
from gregor.protocol.messages.group_coordinator_records.consumer_group_target_assignment_metadata_value import (
    ConsumerGroupTargetAssignmentMetadataValue as TargetMetadataValue,
)
from gregor.protocol.messages import Message
from gregor.protocol.primitives import Reader

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = range(3, 9)
KEY_VERSIONS = frozenset(range(3, 9))
VALUE_VERSION = 0
_VERSION = struct.Struct(">h")


def _encode(version: int, message: Message) -> bytes:
    return _VERSION.pack(version) + message.encode(version)


def _topic_partitions(assignment: Assignment) -> list[tuple[uuid.UUID, list[int]]]:
    return [(topic_id, sorted(partitions)) for topic_id, partitions in sorted(assignment.items())]


# -- writing

def group_epoch_record(group_id: str, epoch: int) -> Record:
    return (_encode(GROUP_METADATA, GroupMetadataKey(group_id=group_id)),
            _encode(VALUE_VERSION, GroupMetadataValue(epoch=epoch)))


def partition_metadata_record(group_id: str, topics: Mapping[str, TopicInfo]) -> Record:
    value = PartitionMetadataValue(topics=[
        PartitionMetadataValue.TopicMetadata(
            topic_id=info.topic_id, topic_name=name, num_partitions=info.num_partitions,
            partition_metadata=[PartitionMetadataValue.PartitionMetadata(
                partition=index, racks=sorted(racks)) for index, racks in enumerate(info.partition_racks)])
        for name, info in sorted(topics.items())])
    return _encode(PARTITION_METADATA, PartitionMetadataKey(group_id=group_id)), _encode(VALUE_VERSION, value)


def partition_racks(num_partitions: int, listed: Iterable[Any]) -> tuple[frozenset[str], ...]:
    """The racks of a PartitionMetadata list by partition index; () when it lists none."""
    by_index = {entry.partition: frozenset(entry.racks) for entry in listed}
    if not by_index:
        return ()
    return tuple(by_index.get(index, frozenset()) for index in range(num_partitions))


def member_metadata_record(group_id: str, member: ConsumerGroupMember) -> Record:
    value = MemberMetadataValue(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=list(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor)
    if member.classic is not None:
        value.classic_member_metadata = MemberMetadataValue.ClassicMemberMetadata(
            session_timeout_ms=member.classic.session_timeout_ms, supported_protocols=[
                MemberMetadataValue.ClassicProtocol(name=name, metadata=metadata)
                for name, metadata in member.classic.protocols])
    return _member_key(MEMBER_METADATA, MemberMetadataKey, group_id, member.member_id), _encode(VALUE_VERSION, value)


def target_assignment_record(group_id: str, member_id: str, assignment: Assignment) -> Record:
    value = TargetMemberValue(topic_partitions=[
        TargetMemberValue.TopicPartition(topic_id=topic_id, partitions=partitions)
        for topic_id, partitions in _topic_partitions(assignment)])
    return _member_key(TARGET_MEMBER, TargetMemberKey, group_id, member_id), _encode(VALUE_VERSION, value)


def target_epoch_record(group_id: str, assignment_epoch: int) -> Record:
    return (_encode(TARGET_METADATA, TargetMetadataKey(group_id=group_id)),
            _encode(VALUE_VERSION, TargetMetadataValue(assignment_epoch=assignment_epoch)))


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> Record:
    def listed(assignment: Assignment) -> list[CurrentAssignmentValue.TopicPartitions]:
        return [CurrentAssignmentValue.TopicPartitions(topic_id=topic_id, partitions=partitions)
                for topic_id, partitions in _topic_partitions(assignment)]

    value = CurrentAssignmentValue(
        member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
        state=int(member.state), assigned_partitions=listed(member.assigned_partitions),
        partitions_pending_revocation=listed(member.partitions_pending_revocation))
    return (_member_key(CURRENT_ASSIGNMENT, CurrentAssignmentKey, group_id, member.member_id),
            _encode(VALUE_VERSION, value))


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A member leaving: its current assignment, target and metadata go, in Kafka's order."""
    return [(_member_key(CURRENT_ASSIGNMENT, CurrentAssignmentKey, group_id, member_id), None),
            (_member_key(TARGET_MEMBER, TargetMemberKey, group_id, member_id), None),
            (_member_key(MEMBER_METADATA, MemberMetadataKey, group_id, member_id), None)]


def group_tombstones(group_id: str) -> list[Record]:
    """A deleted group (without members): its target epoch, subscriptions and epoch go."""
    return [(_encode(TARGET_METADATA, TargetMetadataKey(group_id=group_id)), None),
            (_encode(PARTITION_METADATA, PartitionMetadataKey(group_id=group_id)), None),
            (_encode(GROUP_METADATA, GroupMetadataKey(group_id=group_id)), None)]


def _member_key(version: int, key_type: Callable[..., Message], group_id: str, member_id: str) -> bytes:
    return _encode(version, key_type(group_id=group_id, member_id=member_id))


# -- replay

_KEY_TYPES: dict[int, type[Message]] = {
    GROUP_METADATA: GroupMetadataKey, PARTITION_METADATA: PartitionMetadataKey, MEMBER_METADATA: MemberMetadataKey,
    TARGET_METADATA: TargetMetadataKey, TARGET_MEMBER: TargetMemberKey, CURRENT_ASSIGNMENT: CurrentAssignmentKey,
}


class ConsumerGroupReplay:
    """Groups rebuilt from consumer-group records, fed one at a time in log order.

    Raises DecodeError for malformed bytes (the caller skips the record, as for classic ones).
    """

    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}
        self._members: dict[tuple[str, str], dict[str, object]] = {}

    def apply(self, version: int, key_bytes: bytes, value_bytes: bytes | None) -> None:
        reader = Reader(key_bytes)
        reader.int16()
        key: Any = _KEY_TYPES[version].decode(reader, version)
        group_id: str = key.group_id
        value_reader = None
        if value_bytes is not None:
            value_reader = Reader(value_bytes)
            value_version = value_reader.int16()
        if version == GROUP_METADATA:
            if value_reader is None:
                self.groups.pop(group_id, None)
                return
            self._group(group_id).group_epoch = GroupMetadataValue.decode(value_reader, value_version).epoch
        elif version == PARTITION_METADATA:
            topics = {} if value_reader is None else {
                topic.topic_name: TopicInfo(topic.topic_id, topic.topic_name, topic.num_partitions,
                                            partition_racks(topic.num_partitions, topic.partition_metadata))
                for topic in PartitionMetadataValue.decode(value_reader, value_version).topics}
            if group_id in self.groups or topics:
                self._group(group_id).subscription_metadata = topics
        elif version == TARGET_METADATA:
            if value_reader is not None:
                epoch = TargetMetadataValue.decode(value_reader, value_version).assignment_epoch
                self._group(group_id).assignment_epoch = epoch
        elif version == TARGET_MEMBER:
            if value_reader is None:
                if group_id in self.groups:
                    self.groups[group_id].target.pop(key.member_id, None)
            else:
                value = TargetMemberValue.decode(value_reader, value_version)
                self._group(group_id).target[key.member_id] = normalized(
                    {tp.topic_id: tp.partitions for tp in value.topic_partitions})
        else:
            self._member_record(version, group_id, key.member_id, value_reader,
                                value_version if value_reader is not None else 0)

    def _member_record(self, version: int, group_id: str, member_id: str, reader: Reader | None,
                       value_version: int) -> None:
        fields = self._members.setdefault((group_id, member_id), {})
        if reader is None:
            if version == MEMBER_METADATA:
                self._members.pop((group_id, member_id), None)
            else:
                fields.pop("current", None)
            return
        if version == MEMBER_METADATA:
            fields["metadata"] = MemberMetadataValue.decode(reader, value_version)
        else:
            fields["current"] = CurrentAssignmentValue.decode(reader, value_version)
        self._group(group_id)

    def _group(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ConsumerGroup(group_id)
        return group

    def finish(self) -> list[ConsumerGroup]:
        """The groups with their members (a member needs both its metadata and assignment)."""
        for (group_id, member_id), fields in self._members.items():
            group = self.groups.get(group_id)
            metadata = fields.get("metadata")
            current = fields.get("current")
            if group is None or not isinstance(metadata, MemberMetadataValue) \
                    or not isinstance(current, CurrentAssignmentValue):
                continue
            group.put_member(ConsumerGroupMember(
                member_id=member_id, instance_id=metadata.instance_id, rack_id=metadata.rack_id,
                client_id=metadata.client_id, client_host=metadata.client_host,
                subscribed_topic_names=tuple(metadata.subscribed_topic_names),
                subscribed_topic_regex=metadata.subscribed_topic_regex,
                rebalance_timeout_ms=metadata.rebalance_timeout_ms, server_assignor=metadata.server_assignor,
                classic=_classic(metadata.classic_member_metadata),
                member_epoch=current.member_epoch, previous_member_epoch=current.previous_member_epoch,
                state=_state(current.state),
                assigned_partitions=normalized({tp.topic_id: tp.partitions for tp in current.assigned_partitions}),
                partitions_pending_revocation=normalized(
                    {tp.topic_id: tp.partitions for tp in current.partitions_pending_revocation})))
        for group in self.groups.values():
            for member_id in [m for m in group.target if m not in group.members]:
                del group.target[member_id]
        return list(self.groups.values())


def _classic(metadata: MemberMetadataValue.ClassicMemberMetadata | None) -> ClassicMemberInfo | None:
    """The tagged field is absent (decoded as its empty default) for a consumer-protocol member."""
    if metadata is None or not metadata.supported_protocols:
        return None
    return ClassicMemberInfo(metadata.session_timeout_ms,
                             tuple((protocol.name, bytes(protocol.metadata)) for protocol in metadata.supported_protocols))


def _state(value: int) -> MemberState:
    try:
        return MemberState(value)
    except ValueError:
        return MemberState.UNKNOWN
