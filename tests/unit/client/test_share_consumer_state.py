"""The share consumer's sans-IO parts: membership, share-session epochs, acknowledgement batches,
the acquired records of a ShareFetch answer, and the implicit/explicit acknowledgement rules."""

from __future__ import annotations

import uuid

import pytest

from gregor.client import AcknowledgeType, KafkaException, ShareConsumerRecord
from gregor.client.network import TopicPartition
from gregor.client.serialization import BytesDeserializer, resolve_deserializer
from gregor.client.share.acknowledgements import GAP, acknowledgement_batches
from gregor.client.share.base import ShareConsumerBase
from gregor.client.share.membership import ShareMembership, ShareMemberState
from gregor.client.share.records import acquired_records
from gregor.client.share.session import ShareSession
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ShareFetchResponse, ShareGroupHeartbeatResponse
from gregor.records.record import BatchBuilder

T = uuid.uuid4()
TP = TopicPartition("t", 0)


def test_acknowledgement_batches_coalesce_runs():
    assert acknowledgement_batches({}) == []
    assert acknowledgement_batches({5: 1, 6: 1, 7: 1}) == [(5, 7, [1])]
    assert acknowledgement_batches({5: 1, 6: 2, 9: 3, 10: 0}) == [(5, 6, [1, 2]), (9, 10, [3, 0])]


def test_share_session_epochs():
    session = ShareSession()
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    assert session.plan(frozenset({a, b})) == ({a, b}, frozenset())
    session.answered(frozenset({a, b}))
    assert session.epoch == 1 and session.open
    assert session.plan(frozenset({b})) == (frozenset(), {a})
    session.answered()
    assert session.epoch == 2
    session.epoch = 2**31 - 1
    session.answered()
    assert session.epoch == 1, "wraps to 1, never back to 0 (which would open a new session)"
    session.reset()
    assert not session.open and not session.partitions


def heartbeat_answer(epoch: int, assignment=None, error=ErrorCode.NONE) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(
        error_code=error, member_epoch=epoch, heartbeat_interval_ms=500,
        assignment=None if assignment is None else ShareGroupHeartbeatResponse.Assignment(topic_partitions=[
            ShareGroupHeartbeatResponse.TopicPartitions(topic_id=topic, partitions=parts)
            for topic, parts in assignment.items()]))


def test_share_membership_joins_takes_the_assignment_rejoins_when_fenced_and_leaves():
    m = ShareMembership("g", rack_id=None, retry_backoff_ms=100)
    m.subscribe(("t",), 0.0)
    join = m.heartbeat(0.0)
    assert join.member_epoch == 0 and join.subscribed_topic_names == ["t"] and uuid.UUID(join.member_id)
    m.on_response(heartbeat_answer(1, {T: [0, 1]}), 0.0)
    assert m.state is ShareMemberState.STABLE
    assert m.assignment({T: "t"}) == (frozenset({TopicPartition("t", 0), TopicPartition("t", 1)}), False)
    assert m.assignment({}) == (frozenset(), True)
    assert m.heartbeat(0.5).subscribed_topic_names is None, "unchanged subscription goes as null"
    member_id = m.member_id
    m.on_response(heartbeat_answer(0, error=ErrorCode.FENCED_MEMBER_EPOCH), 0.5)
    rejoin = m.heartbeat(0.5)
    assert (rejoin.member_id, rejoin.member_epoch, rejoin.subscribed_topic_names) == (member_id, 0, ["t"])
    m.on_response(heartbeat_answer(3, {T: [0]}), 0.6)
    assert m.leave(0.7) and m.heartbeat(0.7).member_epoch == -1
    m.on_response(heartbeat_answer(-1), 0.7)
    assert m.state is ShareMemberState.UNSUBSCRIBED and not m.assignment_ids


def test_acquired_records_keep_this_members_ranges_and_report_gaps_and_unseen():
    builder = BatchBuilder(base_offset=10)
    for i in range(6):
        builder.append(1_700_000_000_000, None, b"v%d" % i)
    data = builder.build()
    ranges = [ShareFetchResponse.AcquiredRecords(first_offset=11, last_offset=12, delivery_count=1),
              ShareFetchResponse.AcquiredRecords(first_offset=14, last_offset=17, delivery_count=3)]
    found = acquired_records(TP, data, ranges, key_deserializer=BytesDeserializer(),
                             value_deserializer=BytesDeserializer(), check_crcs=True)
    assert [(r.offset, r.value, r.delivery_count) for r in found.records] == [
        (11, b"v1", 1), (12, b"v2", 1), (14, b"v4", 3), (15, b"v5", 3)]
    assert found.gaps == [] and found.unseen == [16, 17], "offsets past the answer's last batch were not seen"


def test_undecodable_records_are_rejected_and_corrupt_batches_released():
    builder = BatchBuilder(base_offset=0)
    for value in (b"1", b"not json", b"3"):
        builder.append(1_700_000_000_000, None, value)
    data = bytearray(builder.build())
    ranges = [ShareFetchResponse.AcquiredRecords(first_offset=0, last_offset=2, delivery_count=1)]
    found = acquired_records(TP, bytes(data), ranges, key_deserializer=BytesDeserializer(),
                             value_deserializer=resolve_deserializer("json", "value.deserializer"), check_crcs=True)
    assert [r.value for r in found.records] == [1, 3] and found.undecodable == [1]
    assert found.errors[0].name == "_BAD_MSG" and "offset 1 of t-0" in str(found.errors[0])
    data[-1] ^= 0xFF
    corrupt = acquired_records(TP, bytes(data), ranges, key_deserializer=BytesDeserializer(),
                               value_deserializer=BytesDeserializer(), check_crcs=True)
    assert not corrupt.records and corrupt.unseen == [0, 1, 2] and corrupt.errors[0].name == "CORRUPT_MESSAGE"


class Base(ShareConsumerBase):
    """The base without a network: what a poll delivered and what it acknowledges."""


def delivered(explicit: bool) -> tuple[Base, list[ShareConsumerRecord]]:
    base = Base({"bootstrap.servers": "127.0.0.1:9", "group.id": "g",
                 "share.acknowledgement.mode": "explicit" if explicit else "implicit"}, {})
    records = [ShareConsumerRecord("t", 0, offset, 0, 0, None, b"", [], None, -1, 0, delivery_count=1)
               for offset in range(3)]
    base._deliver(records)
    return base, records


def test_implicit_mode_accepts_the_last_polls_records_and_refuses_acknowledge():
    base, records = delivered(explicit=False)
    with pytest.raises(KafkaException, match="explicit"):
        base.acknowledge(records[0])
    assert base._acknowledged() == [(TP, 0, 1), (TP, 1, 1), (TP, 2, 1)]
    assert base._acknowledged() == []


def test_explicit_mode_needs_every_record_acknowledged_before_the_next_poll():
    base, records = delivered(explicit=True)
    base.acknowledge(records[0], AcknowledgeType.RELEASE)
    base.acknowledge(records[2], AcknowledgeType.REJECT)
    with pytest.raises(KafkaException, match="not acknowledged"):
        base._before_poll()
    assert base._acknowledged() == [(TP, 0, 2), (TP, 2, 3)], "a commit sends what is acknowledged"
    with pytest.raises(KafkaException, match="not delivered by the last poll"):
        base.acknowledge(records[0])
    base.acknowledge(records[1])
    assert base._acknowledged() == [(TP, 1, 1)]
    assert GAP == 0
