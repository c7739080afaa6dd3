"""The console's rules that need no cluster: partition health, broker memory, reset plans, form
fields and the same-origin check."""

from __future__ import annotations

import pytest

from gregor.client import TopicPartition
from gregor.client.network import Node
from gregor.console.brokers import BrokerRegistry
from gregor.console.forms import FormError, headers, optional_int, properties, timestamp_ms
from gregor.console.health import PartitionState, count, partition_health
from gregor.console.reset import plan_reset
from gregor.console.security import same_origin


def test_partition_health_follows_kafkas_classes():
    assert partition_health(1, [1, 2, 3], [1, 2, 3], 2).state is PartitionState.ONLINE
    under = partition_health(1, [1, 2, 3], [1, 2], 2)
    assert under.state is PartitionState.UNDER_REPLICATED and not under.under_min_isr
    below = partition_health(1, [1, 2, 3], [1], 2)
    assert below.state is PartitionState.UNDER_MIN_ISR and below.under_replicated
    offline = partition_health(-1, [1, 2, 3], [1], 2)
    assert offline.state is PartitionState.OFFLINE and not offline.under_min_isr
    counts = count([under, below, offline, partition_health(2, [2], [2], 1)])
    assert (counts.total, counts.under_replicated, counts.under_min_isr, counts.offline) == (4, 3, 1, 1)
    assert counts.by_state[PartitionState.ONLINE] == 1 and not counts.healthy


def test_a_broker_that_drops_out_of_the_live_list_is_remembered_as_down():
    registry = BrokerRegistry()
    nodes = [Node(1, "a", 9092, "r1"), Node(2, "b", 9092, None)]
    assert [b.up for b in registry.observe(nodes, [1, 2], now_ms=1000)] == [True, True]
    after = registry.observe(nodes[:1], [1, 2, 3], now_ms=2000)
    assert [(b.node_id, b.up, b.last_seen_ms, b.address) for b in after] == [
        (1, True, 2000, "a:9092"), (2, False, 1000, "b:9092"), (3, False, None, "unknown")]


def test_reset_plans_follow_consumer_groups_reset_offsets():
    p0, p1 = TopicPartition("t", 0), TopicPartition("t", 1)
    committed, earliest, latest = {p0: 5}, {p0: 2, p1: 0}, {p0: 10, p1: 4}
    plan = lambda scenario, **kw: plan_reset(scenario, [p0, p1], committed, earliest, latest, **kw)  # noqa: E731
    assert plan("to-earliest") == {p0: 2, p1: 0}
    assert plan("to-latest") == {p0: 10, p1: 4}
    assert plan("to-offset", value=7) == {p0: 7, p1: 4}  # kept within [earliest, latest]
    assert plan("shift-by", value=-4) == {p0: 2, p1: 0}  # from the log end where nothing is committed
    assert plan("to-datetime", by_time={p0: 6}) == {p0: 6, p1: 4}  # no record that late: the log end
    with pytest.raises(ValueError):
        plan("shift-by")
    with pytest.raises(ValueError):
        plan("to-nowhere")


def test_form_fields_are_checked_with_a_readable_message():
    assert optional_int(" ", "partitions") is None and optional_int("3", "partitions", 1) == 3
    with pytest.raises(FormError, match="partitions must be at least 1, got 0"):
        optional_int("0", "partitions", 1)
    with pytest.raises(FormError, match="must be a whole number"):
        optional_int("three", "partitions")
    assert properties("# c\nretention.ms = 5\n\na=b=c", "configs") == {"retention.ms": "5", "a": "b=c"}
    with pytest.raises(FormError, match="line 1: expected key=value"):
        properties("nonsense", "configs")
    assert headers("k=v\nk=w") == [("k", b"v"), ("k", b"w")]
    assert timestamp_ms("1970-01-01T00:00:01", "time") == 1000 == timestamp_ms("1000", "time")
    with pytest.raises(FormError, match="must be a time"):
        timestamp_ms("yesterday", "time")


def test_forms_posted_from_another_site_are_refused():
    assert same_origin({"host": "127.0.0.1:8080"})  # curl, a script: no browser being misled
    assert same_origin({"host": "127.0.0.1:8080", "origin": "http://127.0.0.1:8080"})
    assert not same_origin({"host": "127.0.0.1:8080", "origin": "http://evil.example"})
    assert not same_origin({"host": "127.0.0.1:8080", "origin": "null"})
    assert same_origin({"host": "x", "origin": "null", "sec-fetch-site": "same-origin"})
    assert not same_origin({"host": "x", "origin": "http://x", "sec-fetch-site": "cross-site"})
