"""Rack-aware replica placement (broker.rack), as Kafka's AdminUtils places replicas."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.controller.placement import place_replicas, rack_alternated

RACKS = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}


def test_brokers_are_listed_one_rack_at_a_time():
    assert rack_alternated([1, 2, 3, 4, 5, 6], RACKS) == [1, 3, 5, 2, 4, 6]
    assert rack_alternated([1, 2, 3], {1: "x", 2: "x", 3: "y"}) == [1, 3, 2]


def test_every_partition_spans_three_racks_and_leaders_spread_evenly():
    placement = place_replicas(sorted(RACKS), range(12), 3, random.Random(5), RACKS)
    for replicas in placement.values():
        assert len(set(replicas)) == 3 and {RACKS[b] for b in replicas} == {"a", "b", "c"}
    assert set(Counter(replicas[0] for replicas in placement.values()).values()) == {2}


def test_more_replicas_than_racks_uses_every_rack():
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    for replicas in place_replicas([1, 2, 3, 4], range(8), 3, random.Random(1), racks).values():
        assert len(set(replicas)) == 3 and {racks[b] for b in replicas} == {"a", "b"}


def test_brokers_without_racks_are_placed_rack_unaware():
    mixed = {1: "a", 2: None, 3: "b"}
    assert place_replicas([1, 2, 3], range(6), 2, random.Random(2), mixed) == \
        place_replicas([1, 2, 3], range(6), 2, random.Random(2))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.integers(1, 4), st.integers(1, 12), st.integers(0, 1000), st.data())
def test_replicas_are_distinct_brokers_on_as_many_racks_as_possible(brokers, rack_count, partitions, seed, data):
    ids = list(range(1, brokers + 1))
    racks = {b: f"r{(b - 1) % rack_count}" for b in ids}
    factor = data.draw(st.integers(1, brokers))
    placement = place_replicas(ids, range(partitions), factor, random.Random(seed), racks)
    assert sorted(placement) == list(range(partitions))
    for replicas in placement.values():
        assert len(replicas) == factor == len(set(replicas)) and set(replicas) <= set(ids)
        assert len({racks[b] for b in replicas}) == min(factor, len(set(racks.values())))
