"""Revoked, lost and assigned partitions around a rebalance, and which listener calls Java makes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gregor.client.assignors import (
    RebalanceChanges, RebalanceProtocol, TopicPartition, changes_before_join, changes_before_leave,
    changes_on_assignment, partitions_changing_owner,
)

EAGER, COOPERATIVE = RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE
A0, A1, B0, B1 = (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("b", 1))
PARTITION_SETS = st.frozensets(st.builds(TopicPartition, st.sampled_from("abc"), st.integers(0, 3)))


def test_eager_revokes_everything_before_joining_even_when_nothing_is_owned() -> None:
    assert changes_before_join(EAGER, {B0, A1}, {"a", "b"}, generation_reset=False) == RebalanceChanges(
        frozenset(), revoked=(A1, B0))
    assert changes_before_join(EAGER, set(), {"a"}, generation_reset=False) == RebalanceChanges(
        frozenset(), revoked=())


def test_cooperative_revokes_only_unsubscribed_topics_before_joining() -> None:
    assert changes_before_join(COOPERATIVE, {A0, B0, B1}, {"a"}, generation_reset=False) == RebalanceChanges(
        frozenset({A0}), revoked=(B0, B1))
    assert changes_before_join(COOPERATIVE, {A0}, {"a"}, generation_reset=False) == RebalanceChanges(
        frozenset({A0}))


def test_a_reset_generation_loses_instead_of_revoking() -> None:
    for protocol in (EAGER, COOPERATIVE):
        assert changes_before_join(protocol, {B0, A0}, {"a"}, generation_reset=True) == RebalanceChanges(
            frozenset(), lost=(A0, B0))
        assert changes_before_join(protocol, set(), {"a"}, generation_reset=True) == RebalanceChanges(frozenset())


def test_eager_assignment_reports_every_partition_as_assigned_even_none() -> None:
    assert changes_on_assignment(EAGER, set(), {B0, A0}) == RebalanceChanges(frozenset({A0, B0}), assigned=(A0, B0))
    assert changes_on_assignment(EAGER, set(), set()) == RebalanceChanges(frozenset(), assigned=())


def test_cooperative_assignment_revokes_what_is_gone_then_adds_what_is_new_and_rejoins() -> None:
    assert changes_on_assignment(COOPERATIVE, {A0, A1}, {A0, B0}) == RebalanceChanges(
        frozenset({A0, B0}), revoked=(A1,), assigned=(B0,), rejoin=True)
    assert changes_on_assignment(COOPERATIVE, {A0}, {A0, B0}) == RebalanceChanges(
        frozenset({A0, B0}), assigned=(B0,))
    assert changes_on_assignment(COOPERATIVE, {A0}, {A0}) == RebalanceChanges(frozenset({A0}), assigned=())


@given(PARTITION_SETS, PARTITION_SETS)
def test_cooperative_assignment_sets_add_up(owned: frozenset[TopicPartition],
                                            assigned: frozenset[TopicPartition]) -> None:
    changes = changes_on_assignment(COOPERATIVE, owned, assigned)
    revoked = set(changes.revoked or ())
    assert changes.owned == assigned == (owned - revoked) | set(changes.assigned)
    assert not revoked & assigned and not set(changes.assigned) & owned
    assert changes.rejoin == bool(revoked)
    assert changes.lost is None
    assert list(changes.assigned) == sorted(changes.assigned)


def test_leaving_revokes_or_loses_what_is_owned() -> None:
    assert changes_before_leave({B0, A0}, generation_reset=False, rebalance_in_progress=False) == RebalanceChanges(
        frozenset(), revoked=(A0, B0))
    assert changes_before_leave({A0}, generation_reset=False, rebalance_in_progress=True) == RebalanceChanges(
        frozenset(), lost=(A0,))
    assert changes_before_leave({A0}, generation_reset=True, rebalance_in_progress=False) == RebalanceChanges(
        frozenset(), lost=(A0,))
    assert changes_before_leave(set(), generation_reset=True, rebalance_in_progress=True) == RebalanceChanges(
        frozenset())


def test_direct_moves_between_owners_are_found() -> None:
    owned = {"x": {A0, A1}, "y": {B0}}
    assert partitions_changing_owner(owned, {"x": {A0}, "y": {B0, A1}}) == {A1: "y"}
    assert partitions_changing_owner(owned, {"x": {A0}, "y": {B0}, "z": {B1}}) == {}
    assert partitions_changing_owner(owned, {"x": {A0, A1, B0}, "y": set()}) == {B0: "x"}
