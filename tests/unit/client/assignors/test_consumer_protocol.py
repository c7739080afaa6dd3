"""ConsumerProtocol subscription and assignment bytes, against kafka-python, aiokafka and the schemas."""

from __future__ import annotations

import struct

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from gregor.client.assignors import (
    Assignment, ConsumerProtocolError, Subscription, TopicPartition, decode_assignment,
    decode_subscription, encode_assignment, encode_subscription,
)
from gregor.protocol.exceptions import EncodeError

TOPIC_NAMES = st.text("abcdefghijklmnopqrstuvwxyzABC0123456789._-", min_size=1, max_size=12)
PARTITION_NUMBERS = st.integers(0, 2**31 - 1)
TOPIC_PARTITIONS = st.builds(TopicPartition, TOPIC_NAMES, PARTITION_NUMBERS)
USER_DATA = st.none() | st.binary(max_size=40)

SUBSCRIPTIONS = st.builds(
    Subscription,
    topics=st.lists(TOPIC_NAMES, unique=True, max_size=6).map(tuple),
    user_data=USER_DATA,
    owned_partitions=st.lists(TOPIC_PARTITIONS, unique=True, max_size=10).map(tuple),
    generation_id=st.none() | st.integers(0, 2**31 - 1),
    rack_id=st.none() | st.text(min_size=1, max_size=8),
)
ASSIGNMENTS = st.builds(
    Assignment,
    partitions=st.lists(TOPIC_PARTITIONS, unique=True, max_size=12).map(tuple),
    user_data=USER_DATA,
)


def _grouped(partitions: list[TopicPartition]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return list(grouped.items())


def _kafka_python_subscription(subscription: Subscription, version: int) -> ConsumerProtocolSubscription:
    """kafka-python's view of the same subscription, with Java's sorting applied by hand."""
    owned = _grouped(sorted(subscription.owned_partitions))
    return ConsumerProtocolSubscription(
        version=version,
        topics=sorted(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=[ConsumerProtocolSubscription.TopicPartition(topic=topic, partitions=partitions)
                          for topic, partitions in owned],
        generation_id=-1 if subscription.generation_id is None else subscription.generation_id,
        rack_id=subscription.rack_id,
    )


def _as_of_version(subscription: Subscription, version: int) -> Subscription:
    """What survives a round trip through `version`: fields it lacks come back as defaults, sorted as Java sends."""
    return Subscription(
        topics=tuple(sorted(subscription.topics)),
        user_data=subscription.user_data,
        owned_partitions=tuple(sorted(subscription.owned_partitions)) if version >= 1 else (),
        generation_id=subscription.generation_id if version >= 2 else None,
        rack_id=subscription.rack_id if version >= 3 else None,
    )


@settings(max_examples=60)
@given(SUBSCRIPTIONS, st.integers(0, 3))
def test_subscription_bytes_equal_kafka_python(subscription: Subscription, version: int) -> None:
    theirs = _kafka_python_subscription(subscription, version).encode()
    assert encode_subscription(subscription, version) == theirs
    assert decode_subscription(theirs) == _as_of_version(subscription, version)


@settings(max_examples=30)
@given(SUBSCRIPTIONS)
def test_version_0_subscription_bytes_equal_aiokafka(subscription: Subscription) -> None:
    user_data = subscription.user_data or b""
    theirs = ConsumerProtocolMemberMetadata(0, sorted(subscription.topics), user_data).encode()
    ours = encode_subscription(Subscription(subscription.topics, user_data), 0)
    assert ours == theirs
    decoded = ConsumerProtocolMemberMetadata.decode(ours)
    assert (decoded.version, decoded.subscription, decoded.user_data) == (0, sorted(subscription.topics), user_data)


@settings(max_examples=60)
@given(ASSIGNMENTS, st.integers(0, 3))
def test_assignment_bytes_equal_kafka_python(assignment: Assignment, version: int) -> None:
    theirs = ConsumerProtocolAssignment(
        version=version,
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=partitions)
                             for topic, partitions in _grouped(list(assignment.partitions))],
        user_data=assignment.user_data,
    ).encode()
    assert encode_assignment(assignment, version) == theirs
    decoded = decode_assignment(theirs)
    assert decoded.user_data == assignment.user_data
    assert sorted(decoded.partitions) == sorted(assignment.partitions)


@settings(max_examples=30)
@given(ASSIGNMENTS)
def test_version_0_assignment_bytes_equal_aiokafka(assignment: Assignment) -> None:
    user_data = assignment.user_data or b""
    grouped = _grouped(list(assignment.partitions))
    theirs = ConsumerProtocolMemberAssignment(0, grouped, user_data).encode()
    assert encode_assignment(Assignment(assignment.partitions, user_data), 0) == theirs
    decoded = decode_assignment(theirs)
    assert (sorted(decoded.partitions), decoded.user_data) == (sorted(assignment.partitions), user_data)


def test_subscription_bytes_by_hand_for_versions_1_to_3() -> None:
    subscription = Subscription(topics=("t",), user_data=None, owned_partitions=(TopicPartition("t", 1),),
                                generation_id=7, rack_id="r1")
    v1 = bytes.fromhex(
        "0001"                      # version 1
        "00000001" "0001" "74"      # topics: ["t"]
        "ffffffff"                  # user_data: null
        "00000001" "0001" "74"      # owned_partitions: [{topic "t",
        "00000001" "00000001"       #   partitions [1]}]
    )
    v2 = b"\x00\x02" + v1[2:] + bytes.fromhex("00000007")     # generation_id 7
    v3 = b"\x00\x03" + v2[2:] + bytes.fromhex("0002") + b"r1"  # rack_id "r1"
    assert encode_subscription(subscription, 1) == v1
    assert encode_subscription(subscription, 2) == v2
    assert encode_subscription(subscription, 3) == v3
    assert encode_subscription(subscription) == v3
    assert decode_subscription(v3) == subscription
    assert decode_subscription(v2) == Subscription(("t",), None, (TopicPartition("t", 1),), 7)


def test_subscription_sorts_topics_and_owned_partitions_as_java() -> None:
    subscription = Subscription(topics=("b", "a"), owned_partitions=(
        TopicPartition("b", 2), TopicPartition("a", 9), TopicPartition("b", 0)))
    decoded = decode_subscription(encode_subscription(subscription, 1))
    assert decoded.topics == ("a", "b")
    assert decoded.owned_partitions == (TopicPartition("a", 9), TopicPartition("b", 0), TopicPartition("b", 2))


def test_assignment_bytes_by_hand() -> None:
    assignment = Assignment((TopicPartition("t0", 2), TopicPartition("t1", 1), TopicPartition("t0", 0)), b"")
    expected = bytes.fromhex(
        "0003"                                      # version 3
        "00000002"                                  # two topics, in first-seen order
        "0002" "7430" "00000002" "00000002" "00000000"  # "t0": [2, 0]
        "0002" "7431" "00000001" "00000001"          # "t1": [1]
        "00000000"                                  # user_data: empty
    )
    assert encode_assignment(assignment) == expected
    assert decode_assignment(expected).partitions == (
        TopicPartition("t0", 2), TopicPartition("t0", 0), TopicPartition("t1", 1))


def test_absent_generation_and_empty_rack_read_as_none() -> None:
    data = bytes.fromhex("0003" "00000000" "ffffffff" "00000000" "ffffffff" "0000")
    assert decode_subscription(data) == Subscription(topics=())


@given(SUBSCRIPTIONS, st.integers(4, 2**15 - 1), st.binary(max_size=16))
def test_newer_subscription_versions_read_as_version_3(subscription: Subscription, version: int,
                                                       trailing: bytes) -> None:
    newer = struct.pack(">h", version) + encode_subscription(subscription)[2:] + trailing
    assert decode_subscription(newer) == decode_subscription(encode_subscription(subscription))


@given(ASSIGNMENTS, st.integers(0, 2**15 - 1), st.binary(max_size=16))
def test_assignment_ignores_trailing_bytes_of_any_version(assignment: Assignment, version: int,
                                                          trailing: bytes) -> None:
    data = struct.pack(">h", version) + encode_assignment(assignment)[2:] + trailing
    assert decode_assignment(data) == decode_assignment(encode_assignment(assignment))


@settings(max_examples=30)
@given(SUBSCRIPTIONS, ASSIGNMENTS, st.integers(0, 3), st.data())
def test_every_truncation_is_a_consumer_protocol_error(subscription: Subscription, assignment: Assignment,
                                                       version: int, data: st.DataObject) -> None:
    subscription_bytes = encode_subscription(subscription, version)
    assignment_bytes = encode_assignment(assignment, version)
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(subscription_bytes[:data.draw(st.integers(0, len(subscription_bytes) - 1))])
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(assignment_bytes[:data.draw(st.integers(0, len(assignment_bytes) - 1))])


@pytest.mark.parametrize("data", [
    b"",
    b"\x00",
    b"\xff\xff" + bytes(8),                             # negative version
    bytes.fromhex("0000" "ffffffff" "ffffffff"),       # null topics array
    bytes.fromhex("0000" "00000001" "0002" "c328" "ffffffff"),  # topic name is not UTF-8
    bytes.fromhex("0000" "7fffffff" "ffffffff"),       # more topics than bytes
])
def test_malformed_subscriptions_raise_a_value_error(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError) as raised:
        decode_subscription(data)
    assert isinstance(raised.value, ValueError)
    assert "subscription" in str(raised.value)


@pytest.mark.parametrize("data", [
    b"",
    b"\x80\x00",
    bytes.fromhex("0001" "00000001" "ffff" "00000000" "ffffffff"),  # null topic name
    bytes.fromhex("0001" "00000001" "0001" "74" "ffffffff" "ffffffff"),  # null partitions array
])
def test_malformed_assignments_raise_a_value_error(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError, match="assignment"):
        decode_assignment(data)


@pytest.mark.parametrize("version", [-1, 4])
def test_encoding_an_unknown_version_is_refused(version: int) -> None:
    with pytest.raises(EncodeError):
        encode_subscription(Subscription(("t",)), version)
    with pytest.raises(EncodeError):
        encode_assignment(Assignment(), version)
