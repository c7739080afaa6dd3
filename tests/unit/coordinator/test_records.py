"""__consumer_offsets record bytes, checked against the schemas in kafka-protocol/group-coordinator."""

from __future__ import annotations

import struct

import pytest

from gregor.coordinator.offset_metadata import OffsetAndMetadata
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
from gregor.protocol.messages.group_coordinator_records.group_metadata_key import GroupMetadataKey
from gregor.protocol.messages.group_coordinator_records.group_metadata_value import GroupMetadataValue
from gregor.protocol.messages.group_coordinator_records.offset_commit_key import OffsetCommitKey


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(text: str) -> bytes:
    data = text.encode()
    return i16(len(data)) + data


NULL_STRING = b"\xff\xff"


def test_offset_commit_key_v1() -> None:
    assert offset_commit_key("g", "t", 0) == b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00"
    assert offset_commit_key("group", "topic", 7) == i16(1) + s("group") + s("topic") + i32(7)


def test_group_metadata_key_v2() -> None:
    assert group_metadata_key("g") == b"\x00\x02\x00\x01g"


def test_offset_commit_value_v3_without_expiry() -> None:
    value = offset_commit_value(OffsetAndMetadata(42, 5, "m", 1000))
    # version 3: offset int64, leaderEpoch int32, metadata string, commitTimestamp int64
    assert value == i16(3) + i64(42) + i32(5) + s("m") + i64(1000)
    assert value == bytes.fromhex("0003" "000000000000002a" "00000005" "00016d" "00000000000003e8")


def test_offset_commit_value_v1_with_expiry() -> None:
    value = offset_commit_value(OffsetAndMetadata(42, 5, "", 1000, 2000))
    # version 1 has no leader epoch but the expireTimestamp
    assert value == i16(1) + i64(42) + s("") + i64(1000) + i64(2000)


def test_group_metadata_value_v3() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer", generation=3, protocol="range", leader="m1", current_state_timestamp=1234,
        members=[GroupMetadataValue.MemberMetadata(
            member_id="m1", group_instance_id=None, client_id="c", client_host="/h", rebalance_timeout=30000,
            session_timeout=10000, subscription=b"\x01\x02", assignment=b"\x03")])
    expected = (i16(3) + s("consumer") + i32(3) + s("range") + s("m1") + i64(1234) + i32(1)
                + s("m1") + NULL_STRING + s("c") + s("/h") + i32(30000) + i32(10000)
                + i32(2) + b"\x01\x02" + i32(1) + b"\x03")
    assert group_metadata_value(value) == expected


def test_empty_group_metadata_value_v3() -> None:
    value = GroupMetadataValue(protocol_type="consumer", generation=2, protocol=None, leader=None,
                               current_state_timestamp=99, members=[])
    assert group_metadata_value(value) == (i16(3) + s("consumer") + i32(2) + NULL_STRING + NULL_STRING + i64(99)
                                           + i32(0))


def test_decode_keys() -> None:
    assert decode_key(offset_commit_key("g", "t", 3)) == OffsetCommitKey(group="g", topic="t", partition=3)
    assert decode_key(i16(0) + s("g") + s("t") + i32(3)) == OffsetCommitKey(group="g", topic="t", partition=3)
    assert decode_key(group_metadata_key("g")) == GroupMetadataKey(group="g")
    # Version 3+ keys are the new consumer protocol's records (ConsumerGroupMetadataKey, ...).
    assert decode_key(i16(3) + s("g")) is None
    with pytest.raises(DecodeError):
        decode_key(i16(2) + b"\x00")


def test_decode_offset_commit_values_of_every_version() -> None:
    assert decode_offset_commit_value(i16(0) + i64(7) + s("md") + i64(100)) == OffsetAndMetadata(7, -1, "md", 100)
    assert decode_offset_commit_value(i16(1) + i64(7) + s("") + i64(100) + i64(-1)) == OffsetAndMetadata(7, -1, "", 100)
    assert decode_offset_commit_value(i16(1) + i64(7) + s("") + i64(100) + i64(500)) == \
        OffsetAndMetadata(7, -1, "", 100, 500)
    assert decode_offset_commit_value(i16(3) + i64(7) + i32(4) + s("x") + i64(100)) == OffsetAndMetadata(7, 4, "x", 100)
    # version 4 is flexible: compact string (length + 1) and an empty tagged-field section
    assert decode_offset_commit_value(i16(4) + i64(7) + i32(4) + b"\x02x" + i64(100) + b"\x00") == \
        OffsetAndMetadata(7, 4, "x", 100)
    with pytest.raises(DecodeError):
        decode_offset_commit_value(i16(9) + i64(7))


def test_offset_commit_value_round_trip() -> None:
    for offset in (OffsetAndMetadata(1, -1, "", 5), OffsetAndMetadata(1 << 40, 9, "meta", 5)):
        assert decode_offset_commit_value(offset_commit_value(offset)) == offset


def test_an_expiring_commit_loses_its_leader_epoch_as_in_kafka() -> None:
    """Version 1, the only one with an expire timestamp, predates leader epochs."""
    decoded = decode_offset_commit_value(offset_commit_value(OffsetAndMetadata(1, 9, "meta", 5, 10)))
    assert decoded == OffsetAndMetadata(1, -1, "meta", 5, 10)


def test_group_metadata_value_v0_uses_session_timeout_as_rebalance_timeout() -> None:
    data = (i16(0) + s("consumer") + i32(1) + s("range") + s("m1") + i32(1)
            + s("m1") + s("c") + s("/h") + i32(10000) + i32(1) + b"s" + i32(1) + b"a")
    value = decode_group_metadata_value(data)
    member = value.members[0]
    assert (member.member_id, member.session_timeout, member.rebalance_timeout) == ("m1", 10000, 10000)
    assert value.current_state_timestamp == -1
    assert (member.subscription, member.assignment) == (b"s", b"a")


def test_group_metadata_value_round_trip() -> None:
    value = GroupMetadataValue(
        protocol_type="connect", generation=9, protocol="sessioned", leader="a", current_state_timestamp=5,
        members=[GroupMetadataValue.MemberMetadata(member_id="a", group_instance_id="i", client_id="c",
                                                   client_host="h", rebalance_timeout=1, session_timeout=2,
                                                   subscription=b"x", assignment=b"")])
    assert decode_group_metadata_value(group_metadata_value(value)) == value
