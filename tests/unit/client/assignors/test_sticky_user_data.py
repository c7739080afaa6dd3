"""The user data the sticky assignors put in a Subscription, in Java's formats."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

from gregor.client.assignors import (
    ASSIGNORS, Assignment, CooperativeStickyAssignor, RangeAssignor, RebalanceProtocol, RoundRobinAssignor,
    StickyAssignor, Subscription, TopicPartition,
)
from gregor.client.assignors.previous_ownership import MemberData
from gregor.client.assignors.sticky import decode_sticky_user_data, encode_sticky_user_data

PARTITIONS = st.lists(st.builds(TopicPartition, st.text("abcxyz._-", min_size=1, max_size=5),
                                st.integers(0, 2**31 - 1)), unique=True, max_size=8)
GENERATIONS = st.integers(-1, 2**31 - 1)


@given(PARTITIONS, GENERATIONS)
def test_sticky_user_data_is_kafka_python_version_1_without_its_version_prefix(partitions, generation) -> None:
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    theirs = StickyAssignorUserData(
        previous_assignment=[StickyAssignorUserData.TopicPartition(topic=topic, partitions=numbers)
                             for topic, numbers in grouped.items()],
        generation=generation)
    ours = encode_sticky_user_data(partitions, generation)
    # Java's StickyAssignor writes the bare struct; kafka-python 3.0 puts an int16 version first,
    # which Java (and Gregor) cannot read back as a previous assignment.
    assert ours == theirs.encode(header=False)
    assert decode_sticky_user_data(ours) == MemberData(tuple(sorted(partitions)), generation)
    assert decode_sticky_user_data(theirs.encode()) == MemberData()


def test_sticky_user_data_bytes_by_hand() -> None:
    data = bytes.fromhex(
        "00000001"                       # one topic
        "0001" "74"                      # "t"
        "00000002" "00000001" "00000002"  # partitions [1, 2]
        "00000003"                       # generation 3
    )
    assert encode_sticky_user_data([TopicPartition("t", 2), TopicPartition("t", 1)], 3) == data
    assert decode_sticky_user_data(data) == MemberData((TopicPartition("t", 1), TopicPartition("t", 2)), 3)
    version_0 = data[:-4]
    assert decode_sticky_user_data(version_0) == MemberData((TopicPartition("t", 1), TopicPartition("t", 2)), -1)


@given(st.binary(max_size=30))
def test_unreadable_sticky_user_data_is_an_empty_claim_not_an_error(data: bytes) -> None:
    claim = decode_sticky_user_data(data)
    assert isinstance(claim, MemberData)


def test_sticky_reports_its_last_assignment_and_generation() -> None:
    assignor = StickyAssignor()
    assert assignor.subscription_user_data({"t"}) is None
    assignor.on_assignment(Assignment((TopicPartition("t", 0),)), 7)
    user_data = assignor.subscription_user_data({"t"})
    assert decode_sticky_user_data(user_data) == MemberData((TopicPartition("t", 0),), 7)
    assert assignor.member_data(Subscription(("t",), user_data=user_data)) == MemberData(
        (TopicPartition("t", 0),), 7)


def test_sticky_without_user_data_reads_the_owned_fields() -> None:
    owned = (TopicPartition("t", 1),)
    assert StickyAssignor().member_data(Subscription(("t",), b"", owned, 4)) == MemberData(owned, 4)
    assert StickyAssignor().member_data(Subscription(("t",))) == MemberData()


def test_cooperative_sticky_reports_its_generation_as_a_bare_int32() -> None:
    assignor = CooperativeStickyAssignor()
    assert assignor.subscription_user_data({"t"}) == b"\xff\xff\xff\xff"
    assignor.on_assignment(Assignment(), 9)
    assert assignor.subscription_user_data({"t"}) == b"\x00\x00\x00\x09"


def test_cooperative_sticky_takes_the_generation_field_before_the_user_data() -> None:
    owned = (TopicPartition("t", 0),)
    assignor = CooperativeStickyAssignor()
    assert assignor.member_data(Subscription(("t",), b"\x00\x00\x00\x02", owned, 5)) == MemberData(owned, 5)
    assert assignor.member_data(Subscription(("t",), b"\x00\x00\x00\x02", owned)) == MemberData(owned, 2)
    assert assignor.member_data(Subscription(("t",), b"\x01", owned)) == MemberData(owned, -1)
    assert assignor.member_data(Subscription(("t",), None, owned)) == MemberData(owned, -1)


def test_assignors_by_name_and_protocol() -> None:
    assert ASSIGNORS == {"range": RangeAssignor, "roundrobin": RoundRobinAssignor, "sticky": StickyAssignor,
                         "cooperative-sticky": CooperativeStickyAssignor}
    assert CooperativeStickyAssignor.supported_protocols == (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
    for eager in (RangeAssignor, RoundRobinAssignor, StickyAssignor):
        assert eager.supported_protocols == (RebalanceProtocol.EAGER,)
