"""The server-side assignors: every subscribed partition goes to exactly one subscriber."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.coordinator.consumer.assignment import pairs, size
from gregor.coordinator.consumer.assignors import MemberSpec, RangeAssignor, UniformAssignor

T1, T2, T3 = (uuid.UUID(int=n) for n in (1, 2, 3))
TOPICS = [T1, T2, T3]


def spec(*topics: uuid.UUID, current=None) -> MemberSpec:
    return MemberSpec(frozenset(topics), current or {})


@st.composite
def groups(draw):
    counts = {topic: draw(st.integers(0, 12)) for topic in TOPICS}
    member_ids = draw(st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=7, unique=True))
    homogeneous = draw(st.booleans())
    members = {}
    for member_id in member_ids:
        topics = TOPICS if homogeneous else draw(st.lists(st.sampled_from(TOPICS), unique=True))
        current = {t: frozenset(draw(st.sets(st.integers(0, 14), max_size=4))) for t in TOPICS}
        members[member_id] = spec(*topics, current={t: p for t, p in current.items() if p})
    return members, counts, homogeneous


def check_complete_and_exclusive(members, counts, result) -> None:
    assert set(result) == set(members)
    owners: dict = {}
    for member_id, assignment in result.items():
        for topic_id, partition in pairs(assignment):
            assert topic_id in members[member_id].subscribed_topic_ids
            assert 0 <= partition < counts[topic_id]
            assert (topic_id, partition) not in owners, "a partition has two owners"
            owners[(topic_id, partition)] = member_id
    subscribed = set().union(*(m.subscribed_topic_ids for m in members.values()))
    assert set(owners) == {(t, p) for t in subscribed for p in range(counts[t])}


@settings(max_examples=100, deadline=None)
@given(groups())
def test_uniform_gives_every_partition_to_one_subscriber_and_balances_identical_subscriptions(group):
    members, counts, homogeneous = group
    result = UniformAssignor().assign(members, counts)
    check_complete_and_exclusive(members, counts, result)
    if homogeneous:
        sizes = [size(assignment) for assignment in result.values()]
        assert max(sizes) - min(sizes) <= 1
    assert UniformAssignor().assign(members, counts) == result, "not deterministic"


@settings(max_examples=100, deadline=None)
@given(groups())
def test_range_gives_every_partition_to_one_subscriber_in_contiguous_ranges(group):
    members, counts, _ = group
    result = RangeAssignor().assign(members, counts)
    check_complete_and_exclusive(members, counts, result)
    for topic_id in TOPICS:
        subscribers = sorted(m for m in members if topic_id in members[m].subscribed_topic_ids)
        if not subscribers:
            continue
        ranges = [sorted(result[m].get(topic_id, ())) for m in subscribers]
        assert [p for r in ranges for p in r] == list(range(counts[topic_id]))
        assert max(map(len, ranges)) - min(map(len, ranges)) <= 1


def test_uniform_is_sticky_when_a_member_joins():
    before = UniformAssignor().assign({"a": spec(T1), "b": spec(T1)}, {T1: 6})
    after = UniformAssignor().assign({"a": spec(T1, current=before["a"]), "b": spec(T1, current=before["b"]),
                                      "c": spec(T1)}, {T1: 6})
    assert [size(after[m]) for m in "abc"] == [2, 2, 2]
    assert after["a"][T1] <= before["a"][T1] and after["b"][T1] <= before["b"][T1]


def test_uniform_with_different_subscriptions_gives_each_topic_to_its_subscribers():
    result = UniformAssignor().assign({"a": spec(T1), "b": spec(T1, T2), "c": spec(T2)}, {T1: 4, T2: 4})
    assert T2 not in result["a"] and T1 not in result["c"]
    sizes = sorted(size(a) for a in result.values())
    assert sizes[-1] - sizes[0] <= 1


def test_range_co_partitions_topics_with_the_same_subscribers():
    result = RangeAssignor().assign({"a": spec(T1, T2), "b": spec(T1, T2)}, {T1: 3, T2: 3})
    assert result["a"] == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}
    assert result["b"] == {T1: frozenset({2}), T2: frozenset({2})}
