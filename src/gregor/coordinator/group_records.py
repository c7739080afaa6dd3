"""Groups and offsets to `__consumer_offsets` records and back (Kafka's storeGroup / loading).

Replaying a partition rebuilds what Kafka's GroupMetadataManager rebuilds: the last group
metadata record of each group (gone after a tombstone) and the last offset per group and
partition. A group comes back Stable when its record has members and Empty otherwise; a group
that only has offsets (simple consumers) comes back Empty without a protocol type.
"""

from __future__ import annotations

import logging
from typing import Iterable, Mapping

from gregor.coordinator.consumer.records import KEY_VERSIONS as CONSUMER_KEY_VERSIONS
from gregor.coordinator.share.share_group_records import KEY_VERSIONS as SHARE_KEY_VERSIONS
from gregor.coordinator.consumer.records import ConsumerGroupReplay
from gregor.coordinator.effects import Record
from gregor.coordinator.group_state import Group, GroupState
from gregor.coordinator.member import MemberMetadata
from gregor.coordinator.offset_metadata import OffsetAndMetadata, TopicPartition
from gregor.coordinator.offsets_records import (
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
)
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.messages.group_coordinator_records.group_metadata_value import GroupMetadataValue
from gregor.protocol.messages.group_coordinator_records.offset_commit_key import OffsetCommitKey

log = logging.getLogger("gregor.coordinator")


def group_metadata_record(group: Group, assignment: Mapping[str, bytes]) -> Record:
    """The group's current generation with each member's metadata for the chosen protocol."""
    protocol = group.protocol_name
    members = [GroupMetadataValue.MemberMetadata(
        member_id=member.member_id, group_instance_id=member.group_instance_id, client_id=member.client_id,
        client_host=member.client_host, rebalance_timeout=member.rebalance_timeout_ms,
        session_timeout=member.session_timeout_ms, subscription=member.metadata(protocol or ""),
        assignment=assignment[member.member_id]) for member in group.members.values()]
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "", generation=group.generation_id, protocol=protocol,
        leader=group.leader_id,
        current_state_timestamp=-1 if group.state_timestamp_ms is None else group.state_timestamp_ms,
        members=members)
    return group_metadata_key(group.group_id), group_metadata_value(value)


def offset_commit_record(group_id: str, partition: TopicPartition, offset: OffsetAndMetadata) -> Record:
    return offset_commit_key(group_id, *partition), offset_commit_value(offset)


def offset_tombstone(group_id: str, partition: TopicPartition) -> Record:
    return offset_commit_key(group_id, *partition), None


def group_tombstone(group_id: str) -> Record:
    return group_metadata_key(group_id), None


def _group_from_value(group_id: str, value: GroupMetadataValue) -> Group:
    state = GroupState.STABLE if value.members else GroupState.EMPTY
    group = Group(group_id, state, None if value.current_state_timestamp == -1 else value.current_state_timestamp)
    group.generation_id = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    group.leader_id = value.leader
    for stored in value.members:
        group.add(MemberMetadata(
            stored.member_id, stored.group_instance_id, stored.client_id, stored.client_host,
            stored.rebalance_timeout, stored.session_timeout, value.protocol_type,
            ((value.protocol or "", stored.subscription),), stored.assignment), None)
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def replay(records: Iterable[tuple[bytes, bytes | None]], now_ms: int,
           consumer: ConsumerGroupReplay | None = None) -> list[Group]:
    """The classic groups a partition's records (in offset order) leave behind; records of
    consumer-protocol groups (KIP-848) go to `consumer`.

    A group known only from offsets gets `now_ms` as the time it became Empty, as in Kafka.

    Records this coordinator cannot read are skipped with a warning: unknown key versions and
    malformed bytes, which Kafka would refuse to load the whole partition over.
    """
    values: dict[str, GroupMetadataValue | None] = {}
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
    for key_bytes, value_bytes in records:
        try:
            key = decode_key(key_bytes)
            key_version = int.from_bytes(key_bytes[:2], "big", signed=True)
            if key is None and consumer is not None and key_version in CONSUMER_KEY_VERSIONS:
                consumer.apply(key_version, key_bytes, value_bytes)
            elif key is None and key_version in SHARE_KEY_VERSIONS:
                continue  # share groups' records: the share runtime replays them (broker.share_group_log)
            elif key is None:
                log.warning("skipping a __consumer_offsets record with unknown key version %d",
                            int.from_bytes(key_bytes[:2], "big", signed=True))
            elif isinstance(key, OffsetCommitKey):
                group_offsets = offsets.setdefault(key.group, {})
                if value_bytes is None:
                    group_offsets.pop((key.topic, key.partition), None)
                else:
                    group_offsets[(key.topic, key.partition)] = decode_offset_commit_value(value_bytes)
            else:
                values[key.group] = None if value_bytes is None else decode_group_metadata_value(value_bytes)
        except DecodeError as error:
            log.warning("skipping a malformed __consumer_offsets record: %s", error)
    groups = []
    for group_id, value in values.items():
        if value is not None:
            group = _group_from_value(group_id, value)
            group.offsets = offsets.pop(group_id, {})
            groups.append(group)
    for group_id, group_offsets in offsets.items():
        if group_offsets:
            group = Group(group_id, GroupState.EMPTY, now_ms)
            group.offsets = group_offsets
            groups.append(group)
    return groups
