"""Rack-aware assignment: members' rack ids against the racks of partitions' replicas. Balance is
never given up for a rack; among balanced assignments, partitions go to members on their racks."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.coordinator.consumer.assignment import pairs
from gregor.coordinator.consumer.assignors import MemberSpec, RangeAssignor, UniformAssignor
from gregor.coordinator.consumer.group import TopicInfo
from tests.unit.coordinator.consumer_harness import ConsumerHarness
from tests.unit.coordinator.test_persistence import reload

TOPICS = [uuid.UUID(int=index + 1) for index in range(3)]
RACKS = ["a", "b", "c"]


def specs(member_racks: list[str | None], topics=TOPICS, current=None) -> dict[str, MemberSpec]:
    return {f"m{index:02}": MemberSpec(frozenset(topics), (current or {}).get(f"m{index:02}", {}), rack)
            for index, rack in enumerate(member_racks)}


def owners(target) -> dict[tuple[uuid.UUID, int], str]:
    found: dict[tuple[uuid.UUID, int], str] = {}
    for member_id, assignment in target.items():
        for topic_partition in pairs(assignment):
            assert topic_partition not in found, f"{topic_partition} has two owners"
            found[topic_partition] = member_id
    return found


def on_rack(target, members, racks) -> int:
    return sum(1 for topic_partition, member_id in owners(target).items()
               if members[member_id].rack in racks[topic_partition[0]][topic_partition[1]])


layouts = st.integers(1, 8).flatmap(lambda members: st.tuples(
    st.lists(st.sampled_from([*RACKS, None]), min_size=members, max_size=members),
    st.lists(st.integers(0, 9), min_size=len(TOPICS), max_size=len(TOPICS)),
    st.randoms(use_true_random=False)))


@settings(max_examples=60, deadline=None)
@given(layouts)
def test_every_partition_has_one_owner_and_counts_stay_balanced(layout):
    member_racks, counts, rng = layout
    partitions = dict(zip(TOPICS, counts))
    racks = {t: tuple(frozenset(rng.sample(RACKS, rng.randint(0, 2))) for _ in range(n)) for t, n in partitions.items()}
    members = specs(member_racks)
    uniform = UniformAssignor().assign(members, partitions, racks)
    assert len(owners(uniform)) == sum(counts)
    loads = [len(list(pairs(a))) for a in uniform.values()]
    assert max(loads) - min(loads) <= 1
    assert UniformAssignor().assign(specs(member_racks, current=uniform), partitions, racks) == uniform, "sticky"
    ranged = RangeAssignor().assign(members, partitions, racks)
    assert len(owners(ranged)) == sum(counts)
    plain = RangeAssignor().assign(members, partitions)
    for member_id in members:  # the range counts per topic do not depend on racks
        assert {t: len(p) for t, p in ranged[member_id].items()} == {t: len(p) for t, p in plain[member_id].items()}


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.randoms(use_true_random=False))
def test_when_racks_allow_it_every_partition_goes_to_a_member_on_its_rack(racks_used, per_rack, rounds, rng):
    """Each partition has one replica rack, each rack as many members and an equal share of
    partitions: a balanced assignment exists with every partition on its member's rack."""
    member_racks = [RACKS[index % racks_used] for index in range(racks_used * per_rack)]
    rng.shuffle(member_racks)
    count = racks_used * per_rack * rounds
    layout = [RACKS[index % racks_used] for index in range(count)]
    racks = {}
    for topic_id in TOPICS:
        rng.shuffle(layout)
        racks[topic_id] = tuple(frozenset({rack}) for rack in layout)
    partitions = {topic_id: count for topic_id in TOPICS}
    members = specs(member_racks)
    for assignor in (UniformAssignor(), RangeAssignor()):
        target = assignor.assign(members, partitions, racks)
        assert on_rack(target, members, racks) == count * len(TOPICS), assignor.name


def test_without_racks_the_assignments_are_unchanged():
    members = specs([None, None, None])
    partitions = {TOPICS[0]: 7, TOPICS[1]: 2}
    racks = {TOPICS[0]: tuple(frozenset({"a"}) for _ in range(7))}
    for assignor in (UniformAssignor(), RangeAssignor()):
        assert assignor.assign(members, partitions, racks) == assignor.assign(members, partitions)
    ranged = RangeAssignor().assign(members, partitions)
    assert [sorted(p for _, p in pairs(ranged[m]) if _ == TOPICS[0]) for m in sorted(ranged)] == [
        [0, 1, 2], [3, 4], [5, 6]]


def test_partition_racks_are_recorded_and_replayed_and_a_rack_change_is_a_new_epoch():
    h = ConsumerHarness()
    racked = (frozenset({"a"}), frozenset({"b"}), frozenset({"a", "b"}))
    h.coordinator.set_topics({"t1": TopicInfo(TOPICS[0], "t1", 3, racked)})
    h.cg("a", 0)
    fresh = reload(h, h.now)
    assert fresh.consumer_groups["g"].subscription_metadata["t1"].partition_racks == racked
    h.coordinator.set_topics({"t1": TopicInfo(TOPICS[0], "t1", 3, racked[:2] + (frozenset({"c"}),))})
    assert h.cg("a", 1, owned=h.coordinator.consumer_groups["g"].target["a"]).member_epoch == 2
