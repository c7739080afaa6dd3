"""The persisted form of a share-partition's state: records of `__share_group_state`.

Kafka's share coordinator writes ShareSnapshot / ShareUpdate records keyed by
group:topicId:partition; Gregor writes one snapshot record per change with this layout of its
own (docs/share-groups.md), in a compacted topic, so the latest record of a key is the state:

    key   = int16 version (0) | string group id | 16-byte topic id | int32 partition
    value = int16 version (0) | int32 state epoch | int64 start offset |
            int32 batch count | batch count x (int64 first | int64 last | int8 state | int16 delivery count)

Strings are int16-length-prefixed UTF-8. A null value (tombstone) forgets the state (a deleted
group or topic).
"""

from __future__ import annotations

import struct
import uuid

from gregor.coordinator.share.record_state import RecordState
from gregor.coordinator.share.share_partition import ShareSnapshot, StateBatch

VERSION = 0
_BATCH = struct.Struct(">qqbh")
_HEAD = struct.Struct(">hiqi")


class ShareStateFormatError(ValueError):
    """A `__share_group_state` record this version cannot read."""


def encode_key(group_id: str, topic_id: uuid.UUID, partition: int) -> bytes:
    group = group_id.encode()
    return struct.pack(">hh", VERSION, len(group)) + group + topic_id.bytes + struct.pack(">i", partition)


def decode_key(data: bytes) -> tuple[str, uuid.UUID, int]:
    try:
        version, size = struct.unpack_from(">hh", data, 0)
        if version != VERSION or len(data) != 4 + size + 20:
            raise ShareStateFormatError(f"share state key of version {version} and {len(data)} bytes")
        group = data[4:4 + size].decode()
        topic_id = uuid.UUID(bytes=bytes(data[4 + size:20 + size]))
        (partition,) = struct.unpack_from(">i", data, 20 + size)
    except (struct.error, UnicodeDecodeError) as error:
        raise ShareStateFormatError(str(error)) from None
    return group, topic_id, partition


def encode_value(snapshot: ShareSnapshot) -> bytes:
    parts = [_HEAD.pack(VERSION, snapshot.state_epoch, snapshot.start_offset, len(snapshot.batches))]
    parts.extend(_BATCH.pack(b.first_offset, b.last_offset, int(b.state), b.delivery_count) for b in snapshot.batches)
    return b"".join(parts)


def decode_value(data: bytes) -> ShareSnapshot:
    try:
        version, epoch, start, count = _HEAD.unpack_from(data, 0)
        if version != VERSION or len(data) != _HEAD.size + count * _BATCH.size:
            raise ShareStateFormatError(f"share state value of version {version} and {len(data)} bytes")
        batches = tuple(StateBatch(first, last, RecordState(state), delivered)
                        for first, last, state, delivered in _BATCH.iter_unpack(data[_HEAD.size:]))
    except (struct.error, ValueError) as error:
        if isinstance(error, ShareStateFormatError):
            raise
        raise ShareStateFormatError(str(error)) from None
    return ShareSnapshot(start, epoch, batches)
