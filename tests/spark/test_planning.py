"""Offsets JSON, admission control and range planning without Spark or a broker."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gregor.client import TopicPartition
from gregor.spark.admission import TriggerDelay, available, cap
from gregor.spark.errors import DataLossError
from gregor.spark.offsets import from_json_dict, parse_json, to_json_dict
from gregor.spark.options import ReadSettings
from gregor.spark.ranges import OffsetRange, plan_ranges
from gregor.spark.schema import arrow_schema, source_schema

A0, A1, A10, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("a", 10), TopicPartition("b", 0)


def test_offsets_json_is_canonical_whatever_the_insertion_order():
    offsets = {B0: 1, A10: 3, A1: 2, A0: 0}
    assert json.dumps(to_json_dict(offsets)) == '{"a": {"0": 0, "1": 2, "10": 3}, "b": {"0": 1}}'
    assert json.dumps(to_json_dict(dict(reversed(offsets.items())))) == json.dumps(to_json_dict(offsets))
    assert from_json_dict(to_json_dict(offsets)) == offsets


@pytest.mark.parametrize("text", ['[1]', '{"a": 1}', '{"a": {"-1": 0}}', '{"a": {"0": -3}}', '{"a": {"0": 1.5}}',
                                  '{"a": {"0": true}}', "{"])
def test_malformed_offsets_json(text):
    with pytest.raises(ValueError):
        parse_json(text)


@given(st.dictionaries(st.sampled_from([A0, A1, A10, B0]), st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
                       min_size=1), st.integers(1, 3000))
def test_cap_takes_exactly_the_limit_in_proportion(ranges, limit):
    start = {tp: min(pair) for tp, pair in ranges.items()}
    latest = {tp: max(pair) for tp, pair in ranges.items()}
    end = cap(start, latest, limit)
    assert set(end) == set(latest)
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in latest)
    assert available(start, end) == min(limit, available(start, latest))
    total = available(start, latest)
    if total > limit:
        for tp in latest:
            share = (latest[tp] - start[tp]) * limit / total
            assert abs((end[tp] - start[tp]) - share) < 1


def test_cap_splits_evenly_and_keeps_a_partition_that_went_back():
    assert cap({A0: 0, A1: 0}, {A0: 10, A1: 10}, 6) == {A0: 3, A1: 3}
    assert cap({A0: 0, A1: 50}, {A0: 100, A1: 40}, 10) == {A0: 10, A1: 40}


def test_trigger_delay_waits_for_enough_rows_or_the_delay():
    now = [0.0]
    delay = TriggerDelay(min_rows=10, max_delay_ms=5000, clock=lambda: now[0])
    assert not delay.admit(3)
    now[0] = 4.9
    assert not delay.admit(9)
    assert delay.admit(10)
    now[0] = 9.8
    assert not delay.admit(1)
    now[0] = 10.0
    assert not delay.admit(0)
    assert delay.admit(1)
    assert not delay.admit(2)


SETTINGS = ReadSettings({"bootstrap.servers": "h:1"}, fail_on_data_loss=True)


def test_plan_ranges_new_partitions_start_at_their_earliest():
    ranges = plan_ranges({A0: 5}, {A0: 9, A1: 4, B0: 0}, {A0: 0, A1: 2, B0: 0}, SETTINGS)
    assert ranges == [OffsetRange("a", 0, 5, 9, SETTINGS), OffsetRange("a", 1, 2, 4, SETTINGS)]


@pytest.mark.parametrize(("start", "end", "earliest", "message"), [
    ({A0: 5}, {A0: 9}, {A0: 7}, "offsets 5 to 6 of a-0 were deleted"),
    ({A0: 5}, {A0: 3}, {A0: 0}, "went back from 5 to 3"),
    ({A0: 5, B0: 1}, {A0: 5}, {A0: 0}, "partition b-0 is gone"),
])
def test_plan_ranges_data_loss(start, end, earliest, message):
    with pytest.raises(DataLossError, match=message):
        plan_ranges(start, end, earliest, SETTINGS)
    lenient = ReadSettings(SETTINGS.client_config, fail_on_data_loss=False)
    ranges = plan_ranges(start, end, earliest, lenient)
    assert all(r.start >= earliest[TopicPartition(r.topic, r.partition)] and r.end > r.start for r in ranges)


def test_arrow_schema_is_what_spark_derives():
    from pyspark.sql.pandas.types import to_arrow_schema

    for headers in (False, True):
        assert to_arrow_schema(source_schema(headers), timezone="UTC").equals(arrow_schema(headers))
