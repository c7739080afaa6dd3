"""Keys and values of `__consumer_offsets` records, byte-compatible with Apache Kafka.

Every key and value is an int16 schema version followed by the struct encoded at that version;
a deleted offset or group is a record with a null value (a tombstone). Key versions 0 and 1 are
OffsetCommitKey, 2 is GroupMetadataKey; higher key versions belong to records of the new
consumer protocol (KIP-848), which this coordinator does not read.

Versions written are Kafka 3.x's: OffsetCommitKey v1, GroupMetadataKey v2, GroupMetadataValue
v3 and OffsetCommitValue v3, or v1 when the commit carries an expire timestamp (the only
version with that field, and one without a leader epoch: such a commit loses its epoch, as in
Kafka).
"""

from __future__ import annotations

import struct

from gregor.coordinator.offset_metadata import OffsetAndMetadata
from gregor.protocol.messages.group_coordinator_records.group_metadata_key import GroupMetadataKey
from gregor.protocol.messages.group_coordinator_records.group_metadata_value import GroupMetadataValue
from gregor.protocol.messages.group_coordinator_records.offset_commit_key import OffsetCommitKey
from gregor.protocol.messages.group_coordinator_records.offset_commit_value import OffsetCommitValue
from gregor.protocol.primitives import Reader

OFFSET_COMMIT_KEY_VERSION = 1
OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1

_VERSION = struct.Struct(">h")


def _prefixed(version: int, body: bytes) -> bytes:
    return _VERSION.pack(version) + body


def offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    return _prefixed(OFFSET_COMMIT_KEY_VERSION, key.encode(OFFSET_COMMIT_KEY_VERSION))


def group_metadata_key(group_id: str) -> bytes:
    key = GroupMetadataKey(group=group_id)
    return _prefixed(GROUP_METADATA_KEY_VERSION, key.encode(GROUP_METADATA_KEY_VERSION))


def offset_commit_value(offset: OffsetAndMetadata) -> bytes:
    expire = offset.expire_timestamp_ms
    version = OFFSET_COMMIT_VALUE_VERSION if expire is None else OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
    value = OffsetCommitValue(offset=offset.offset, leader_epoch=offset.leader_epoch, metadata=offset.metadata,
                              commit_timestamp=offset.commit_timestamp_ms,
                              expire_timestamp=-1 if expire is None else expire)
    return _prefixed(version, value.encode(version))


def group_metadata_value(value: GroupMetadataValue) -> bytes:
    return _prefixed(GROUP_METADATA_VALUE_VERSION, value.encode(GROUP_METADATA_VALUE_VERSION))


def _split(data: bytes) -> tuple[int, Reader]:
    reader = Reader(data)
    return reader.int16(), reader


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """The key struct, or None for a key version this coordinator does not know.

    Raises DecodeError when the bytes do not hold the struct their version announces. Bytes after
    the struct are ignored, as Kafka's reader does (room for fields a later version appends).
    """
    version, reader = _split(data)
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        return OffsetCommitKey.decode(reader, version)
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey.decode(reader, version)
    return None


def decode_offset_commit_value(data: bytes) -> OffsetAndMetadata:
    """Raises DecodeError for an unknown version or malformed bytes."""
    version, reader = _split(data)
    value = OffsetCommitValue.decode(reader, version)
    return OffsetAndMetadata(
        offset=value.offset,
        leader_epoch=value.leader_epoch,
        metadata=value.metadata,
        commit_timestamp_ms=value.commit_timestamp,
        expire_timestamp_ms=None if value.expire_timestamp == -1 else value.expire_timestamp)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    """Raises DecodeError for an unknown version or malformed bytes.

    Version 0 has no rebalance timeout; as in Kafka, the session timeout stands in for it.
    """
    version, reader = _split(data)
    value = GroupMetadataValue.decode(reader, version)
    if version == 0:
        for member in value.members:
            member.rebalance_timeout = member.session_timeout
    return value

