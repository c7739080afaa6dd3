"""Consumer-group records byte for byte as Kafka writes them, and replayed back."""

from __future__ import annotations

import uuid

from gregor.coordinator.consumer.group import TopicInfo
from gregor.coordinator.consumer.member import ConsumerGroupMember, MemberState
from gregor.coordinator.consumer.records import (
    ConsumerGroupReplay,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    member_tombstones,
    partition_metadata_record,
    target_assignment_record,
    target_epoch_record,
)

TOPIC = uuid.UUID(int=7)


def test_keys_and_values_are_kafkas_bytes():
    # key: int16 record type 3, then GroupId as an int16-length string (keys are not flexible);
    # value: int16 version 0, Epoch int32, an empty tagged-field section.
    assert group_epoch_record("g", 5) == (b"\x00\x03\x00\x01g", b"\x00\x00\x00\x00\x00\x05\x00")
    assert target_epoch_record("g", 5)[0] == b"\x00\x06\x00\x01g"
    key, value = target_assignment_record("g", "m", {TOPIC: frozenset({1, 0})})
    assert key == b"\x00\x07\x00\x01g\x00\x01m"
    # TopicPartitions: compact array of 1, the uuid, compact array of 2 int32s, tags; then tags.
    assert value == b"\x00\x00" + b"\x02" + TOPIC.bytes + b"\x03\x00\x00\x00\x00\x00\x00\x00\x01\x00" + b"\x00"


def test_a_group_is_replayed_from_its_records_and_tombstones():
    member = ConsumerGroupMember("m", instance_id="i", client_id="c", client_host="/h", subscribed_topic_names=("t",),
                                 rebalance_timeout_ms=1000, member_epoch=3, previous_member_epoch=2,
                                 state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions={TOPIC: frozenset({0})},
                                 partitions_pending_revocation={TOPIC: frozenset({1})})
    gone = ConsumerGroupMember("x", subscribed_topic_names=("t",))
    records = [member_metadata_record("g", member), member_metadata_record("g", gone),
               partition_metadata_record("g", {"t": TopicInfo(TOPIC, "t", 2)}), group_epoch_record("g", 4),
               target_assignment_record("g", "m", {TOPIC: frozenset({0})}), target_epoch_record("g", 4),
               current_assignment_record("g", member), current_assignment_record("g", gone),
               *member_tombstones("g", "x"), group_epoch_record("dropped", 1), (group_epoch_record("dropped", 1)[0], None)]
    replay = ConsumerGroupReplay()
    for key, value in records:
        replay.apply(int.from_bytes(key[:2], "big"), key, value)
    (group,) = replay.finish()
    assert (group.group_id, group.group_epoch, group.assignment_epoch) == ("g", 4, 4)
    assert group.members == {"m": member} and group.static_members == {"i": "m"}
    assert group.target == {"m": {TOPIC: frozenset({0})}}
    assert group.subscription_metadata == {"t": TopicInfo(TOPIC, "t", 2)}
    assert group.owner_of(TOPIC, 1) == "m", "a partition pending revocation is still held"
