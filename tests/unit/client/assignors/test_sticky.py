"""Sticky and cooperative-sticky: valid, balanced and sticky across membership changes, and cooperative
moves in two steps. Kafka's documented examples pin down the exact answers where they are unique."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gregor.client.assignors import (
    CooperativeStickyAssignor, StickyAssignor, Subscription, TopicPartition, partitions_changing_owner,
)
from tests.unit.client.assignors.group_simulation import Group

TOPICS = ("t0", "t1", "t2", "t3", "t4")
STICKY_ASSIGNORS = pytest.mark.parametrize("assignor_class", [StickyAssignor, CooperativeStickyAssignor])
Assignment = Mapping[str, frozenset[TopicPartition]]


def _partitions(partitions_per_topic: Mapping[str, int], topics: tuple[str, ...]) -> set[TopicPartition]:
    return {TopicPartition(topic, partition) for topic in topics
            for partition in range(partitions_per_topic.get(topic, 0))}


def assert_valid(group: Group, assignment: Assignment) -> None:
    """Every partition of a subscribed topic goes to exactly one member, which subscribes to its topic."""
    assert set(assignment) == set(group.members)
    owners: dict[TopicPartition, str] = {}
    for member, partitions in assignment.items():
        assert partitions <= _partitions(group.partitions_per_topic, group.members[member].topics)
        for partition in partitions:
            assert owners.setdefault(partition, member) == member, f"{partition} assigned twice"
    subscribed = {topic for member in group.members.values() for topic in member.topics}
    assert set(owners) == _partitions(group.partitions_per_topic, tuple(subscribed))


def assert_balanced(group: Group, assignment: Assignment) -> None:
    """Kafka's isBalanced: no member short of all it could hold could take a partition from a member
    holding two or more than it; with identical subscriptions that means counts differ by at most one."""
    owner = {partition: member for member, partitions in assignment.items() for partition in partitions}
    for member, partitions in assignment.items():
        could_hold = _partitions(group.partitions_per_topic, group.members[member].topics)
        if len(partitions) < len(could_hold):
            for partition in could_hold - partitions:
                assert len(assignment[owner[partition]]) <= len(partitions) + 1, (
                    f"{partition} could move from {owner[partition]} to {member}")
    if len({group.members[member].topics for member in assignment}) == 1:
        counts = [len(partitions) for partitions in assignment.values()]
        assert max(counts) - min(counts) <= 1


def assert_sticky(before: Assignment, after: Assignment) -> None:
    """A surviving member keeps as many of its partitions as its new share allows, and a partition only
    moves between two surviving members when the first sheds load and the second gains it."""
    survivors = set(before) & set(after)
    for member in survivors:
        assert len(before[member] & after[member]) == min(len(before[member]), len(after[member]))
    for giver in survivors:
        for taker in survivors - {giver}:
            if before[giver] & after[taker]:
                assert len(after[giver]) < len(before[giver]) and len(after[taker]) > len(before[taker])


def assert_no_swaps(before: Assignment, after: Assignment) -> None:
    """Kafka's isSticky: partitions of one topic never move both ways between the same two members."""
    moves = {(partition.topic, giver, taker)
             for giver in set(before) & set(after) for taker in after if taker != giver
             for partition in before[giver] & after[taker]}
    assert not {(topic, giver, taker) for topic, giver, taker in moves if (topic, taker, giver) in moves}


def rebalance_checked(group: Group) -> Assignment:
    """One rebalance; under the cooperative protocol nothing may go to a member while another owns it."""
    owned = group.owned()
    assignment = group.rebalance()
    if group.cooperative:
        assert partitions_changing_owner(owned, assignment) == {}
    return assignment


def settle(group: Group) -> Assignment:
    """Rebalance until nobody revokes anything: one eager rebalance, or cooperative rounds plus follow-ups."""
    for _ in range(4):
        owned = group.owned()
        assignment = rebalance_checked(group)
        if all(owned[member] <= assignment[member] for member in owned):
            return assignment
    raise AssertionError("the group still revokes partitions after four rebalances")


@st.composite
def membership_changes(draw: st.DrawFn, *, same_topics: bool) -> tuple[dict[str, int], list, list, list]:
    """Topics, the first members, which of them leave, and who joins; each member with its topics."""
    partitions_per_topic = draw(st.fixed_dictionaries({topic: st.integers(1, 8) for topic in TOPICS}))
    some_topics = st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True).map(tuple)
    shared = draw(some_topics)
    topics = st.just(shared) if same_topics else some_topics
    first = [(f"m{index}", draw(topics)) for index in range(draw(st.integers(1, 6)))]
    leaving = draw(st.lists(st.sampled_from([member for member, _ in first]), unique=True,
                            max_size=len(first) - 1))
    joining = [(f"n{index}", draw(topics)) for index in range(draw(st.integers(0, 3)))]
    return partitions_per_topic, first, leaving, joining


def _run(assignor_class: type, change: tuple[dict[str, int], list, list, list]) -> tuple[Group, Assignment, Assignment]:
    partitions_per_topic, first, leaving, joining = change
    group = Group(assignor_class, partitions_per_topic)
    for member, topics in first:
        group.join(member, topics)
    before = settle(group)
    assert_valid(group, before)
    assert_balanced(group, before)
    for member in leaving:
        group.leave(member)
    for member, topics in joining:
        group.join(member, topics)
    after = settle(group)
    assert_valid(group, after)
    assert_balanced(group, after)
    return group, before, after


@STICKY_ASSIGNORS
@settings(max_examples=80, deadline=None)
@given(change=membership_changes(same_topics=True))
def test_identical_subscriptions_stay_valid_balanced_and_sticky(assignor_class: type, change) -> None:
    _, before, after = _run(assignor_class, change)
    assert_sticky(before, after)


@STICKY_ASSIGNORS
@settings(max_examples=80, deadline=None)
@given(change=membership_changes(same_topics=False))
# a swap hypothesis found once: balancing moved t1-0 from m0 to n0, a t1 partition from m1 to m0,
# then t1-0 on from n0 to m1 (both now go home instead)
@example(change=({"t0": 1, "t1": 5, "t2": 7, "t3": 6, "t4": 2}, [("m0", ("t1", "t3")), ("m1", ("t1", "t2"))], [],
                 [("n0", ("t1", "t3", "t4")), ("n1", ("t2",)), ("n2", ("t2",))]))
def test_differing_subscriptions_stay_valid_balanced_and_never_swap(assignor_class: type, change) -> None:
    """No swaps is checked of the eager protocol, where one assignment makes the whole move. Under
    the cooperative one a move takes a revoking rebalance and a follow-up, which assigns the
    revoked partitions afresh (the assignor keeps no state between the two, as Kafka's does not):
    two partitions of a topic can then end up exchanged between two members, rarely (once in
    thousands of these groups; for example t0..t4 of 5, 6, 6, 2, 7 partitions, m0 t0+t2, m1 t3+t1,
    m2 t4+t0, m3 t0+t1, then n0 t0 and n1 t1 joining). Cooperative groups are still checked valid,
    balanced, never handed an owned partition, and settled."""
    group, before, after = _run(assignor_class, change)
    if not group.cooperative:
        assert_no_swaps(before, after)
    assert rebalance_checked(group) == after, "a settled assignment must not change when nothing does"


@settings(max_examples=60, deadline=None)
@given(change=membership_changes(same_topics=True))
def test_cooperative_revokes_first_and_the_follow_up_rebalance_completes_the_move(change) -> None:
    partitions_per_topic, first, leaving, joining = change
    group = Group(CooperativeStickyAssignor, partitions_per_topic)
    for member, topics in first:
        group.join(member, topics)
    before = settle(group)
    for member in leaving:
        group.leave(member)
    for member, topics in joining:
        group.join(member, topics)

    owned = group.owned()
    first_round = rebalance_checked(group)
    revoked = {member: owned[member] - first_round[member] for member in owned}
    follow_up = rebalance_checked(group)

    assert all(first_round[member] <= follow_up[member] for member in follow_up), "follow-up revoked more"
    assert_valid(group, follow_up)
    assert_balanced(group, follow_up)
    assert_sticky(before, follow_up)
    held_back = set().union(*revoked.values()) - set().union(*first_round.values())
    assert held_back <= set().union(*follow_up.values())


@STICKY_ASSIGNORS
def test_kafka_example_with_identical_subscriptions(assignor_class: type) -> None:
    group = Group(assignor_class, {topic: 2 for topic in ("t0", "t1", "t2", "t3")})
    for member in ("C0", "C1", "C2"):
        group.join(member, ("t0", "t1", "t2", "t3"))
    before = settle(group)
    assert before == {"C0": {TopicPartition("t0", 0), TopicPartition("t1", 1), TopicPartition("t3", 0)},
                      "C1": {TopicPartition("t0", 1), TopicPartition("t2", 0), TopicPartition("t3", 1)},
                      "C2": {TopicPartition("t1", 0), TopicPartition("t2", 1)}}
    group.leave("C1")
    after = settle(group)
    assert before["C0"] < after["C0"] and before["C2"] < after["C2"]
    assert len(after["C0"]) == len(after["C2"]) == 4


@STICKY_ASSIGNORS
def test_kafka_example_with_differing_subscriptions(assignor_class: type) -> None:
    group = Group(assignor_class, {"t0": 1, "t1": 2, "t2": 3})
    group.join("C0", ("t0",))
    group.join("C1", ("t0", "t1"))
    group.join("C2", ("t0", "t1", "t2"))
    assert settle(group) == {
        "C0": {TopicPartition("t0", 0)},
        "C1": {TopicPartition("t1", 0), TopicPartition("t1", 1)},
        "C2": {TopicPartition("t2", 0), TopicPartition("t2", 1), TopicPartition("t2", 2)}}
    group.leave("C0")
    assert settle(group) == {
        "C1": {TopicPartition("t0", 0), TopicPartition("t1", 0), TopicPartition("t1", 1)},
        "C2": {TopicPartition("t2", 0), TopicPartition("t2", 1), TopicPartition("t2", 2)}}


def test_cooperative_holds_back_a_moving_partition_for_one_rebalance() -> None:
    group = Group(CooperativeStickyAssignor, {"t": 2})
    group.join("a", ("t",))
    assert settle(group) == {"a": {TopicPartition("t", 0), TopicPartition("t", 1)}}
    group.join("b", ("t",))
    assert group.rebalance() == {"a": {TopicPartition("t", 0)}, "b": frozenset()}
    assert group.rebalance() == {"a": {TopicPartition("t", 0)}, "b": {TopicPartition("t", 1)}}


def _subscription(topics: tuple[str, ...], owned: tuple[TopicPartition, ...], generation: int) -> Subscription:
    return Subscription(topics, owned_partitions=owned, generation_id=generation)


def test_the_newer_generation_wins_a_disputed_partition() -> None:
    disputed = TopicPartition("t", 0)
    subscriptions = {"old": _subscription(("t",), (disputed, TopicPartition("t", 1)), 3),
                     "new": _subscription(("t",), (disputed,), 4)}
    result = CooperativeStickyAssignor().assign({"t": 2}, subscriptions)
    assert result["new"].partitions == (disputed,)
    assert result["old"].partitions == (TopicPartition("t", 1),)


def test_a_partition_claimed_twice_in_one_generation_goes_to_nobody_until_released() -> None:
    disputed = TopicPartition("t", 0)
    subscriptions = {"a": _subscription(("t",), (disputed,), 5), "b": _subscription(("t",), (disputed,), 5)}
    result = CooperativeStickyAssignor().assign({"t": 2}, subscriptions)
    assert disputed not in result["a"].partitions + result["b"].partitions
    eager = StickyAssignor().assign({"t": 2}, subscriptions)
    assert sorted(eager["a"].partitions + eager["b"].partitions) == [disputed, TopicPartition("t", 1)]


def test_partitions_of_unsubscribed_or_vanished_topics_are_not_kept() -> None:
    subscriptions = {"a": _subscription(("t",), (TopicPartition("gone", 0), TopicPartition("u", 0),
                                                 TopicPartition("t", 7)), 2),
                     "b": _subscription(("t", "u"), (), 2)}
    result = StickyAssignor().assign({"t": 2, "u": 1}, subscriptions)
    assert set(result["a"].partitions) | set(result["b"].partitions) == {
        TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)}
    assert TopicPartition("u", 0) in result["b"].partitions


def _numbered(topic: str, *partitions: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic, partition) for partition in partitions)


def test_general_path_undoes_earlier_moves_instead_of_making_new_ones() -> None:
    # m1 must shed five of nine partitions; without undoing earlier moves of a topic between two
    # members, balancing takes seven partitions off it and hands two of them back.
    owned = _numbered("t0", 1, 3, 5, 7, 9, 11) + _numbered("t1", 1, 3, 5)
    subscriptions = {"m1": _subscription(("t0", "t1"), owned, 1),
                     "n0": Subscription(("t1",)), "n1": Subscription(("t0", "t1")),
                     "n2": Subscription(("t1",)), "n3": Subscription(("t0", "t1"))}
    result = StickyAssignor().assign({"t0": 12, "t1": 6}, subscriptions)
    assert len(result["m1"].partitions) == 4
    assert set(result["m1"].partitions) <= set(owned)


def test_general_path_first_moves_partitions_nobody_owned() -> None:
    owned = _numbered("t1", 0) + _numbered("t2", 1, 3)
    subscriptions = {"m0": _subscription(("t1", "t2"), owned, 1),
                     "n0": Subscription(("t0", "t2")), "n1": Subscription(("t0", "t1"))}
    result = StickyAssignor().assign({"t0": 3, "t1": 1, "t2": 4}, subscriptions)
    assert result["m0"].partitions == owned


def test_general_path_gives_a_moving_partition_back_to_its_previous_generation_owner() -> None:
    subscriptions = {"m0": _subscription(("t0", "t1"), _numbered("t0", 0) + _numbered("t1", 1, 2), 2),
                     "m1": _subscription(("t0", "t1"), _numbered("t1", 0, 3), 2),
                     "m2": _subscription(("t1",), _numbered("t1", 1), 1)}
    result = StickyAssignor().assign({"t0": 1, "t1": 4}, subscriptions)
    assert TopicPartition("t1", 1) in result["m2"].partitions
