"""Which supplied keys count as unknown at start, and the key a misspelt one was meant to be."""

from __future__ import annotations

import pytest

from gregor.broker.unknown_config import closest_key, describe_unknown_key, unknown_keys


def test_keys_gregor_reads_are_known():
    supplied = ["listeners", "log.dirs", "group.initial.rebalance.delay.ms", "metrics.host",
                "log.preallocate", "log.roll.jitter.ms", "log.segment.delete.delay.ms",
                "listener.name.internal.socket.receive.buffer.bytes"]
    assert unknown_keys(supplied) == []


def test_the_keys_of_kafka_4s_quickstart_properties_are_known():
    supplied = ["controller.quorum.bootstrap.servers", "num.recovery.threads.per.data.dir",
                "share.coordinator.state.topic.min.isr", "share.coordinator.state.topic.replication.factor",
                "num.io.threads", "num.network.threads", "transaction.state.log.min.isr"]
    assert unknown_keys(supplied) == []


def test_unknown_keys_are_listed_once_and_sorted():
    assert unknown_keys(["zookeeper.connect", "listners", "listeners", "listners"]) == ["listners", "zookeeper.connect"]


@pytest.mark.parametrize("name, meant", [
    ("listners", "listeners"),
    ("auto.create.topic.enable", "auto.create.topics.enable"),
    ("log.retention.hour", "log.retention.hours"),
    ("metric.port", "metrics.port"),
    ("retention.ms", "log.retention.ms"),       # a topic config: the broker key for its default
    ("segment.ms", "log.roll.ms"),
    ("zookeeper.connect", None),
    ("foo", None),
])
def test_the_closest_known_key(name, meant):
    assert closest_key(name) == meant


def test_the_warning_names_the_key_and_the_suggestion():
    assert describe_unknown_key("listners") == (
        "The configuration 'listners' was supplied but isn't a known config; did you mean 'listeners'?")
    assert describe_unknown_key("zookeeper.connect") == (
        "The configuration 'zookeeper.connect' was supplied but isn't a known config")
