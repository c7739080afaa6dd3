"""The coordinator's broker keys and defaults."""

from __future__ import annotations

import pytest

from gregor.broker.config import BrokerConfig, ConfigError
from gregor.coordinator import GroupCoordinatorConfig
from gregor.coordinator.config import consumer_assignors


def test_defaults_are_kafkas() -> None:
    config = GroupCoordinatorConfig()
    assert (config.group_min_session_timeout_ms, config.group_max_session_timeout_ms) == (6000, 1800000)
    assert (config.group_initial_rebalance_delay_ms, config.group_max_size) == (3000, 2147483647)
    assert (config.offsets_retention_minutes, config.offsets_retention_check_interval_ms) == (10080, 600000)
    assert (config.offset_metadata_max_bytes, config.offsets_topic_num_partitions) == (4096, 50)
    assert config.offsets_retention_ms == 7 * 24 * 3600 * 1000


def test_from_properties_reads_the_broker_keys() -> None:
    config = GroupCoordinatorConfig.from_properties({
        "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": " 3 ", "log.dirs": "/elsewhere"})
    assert (config.group_initial_rebalance_delay_ms, config.offsets_topic_num_partitions) == (0, 3)
    assert config.group_max_size == 2147483647
    with pytest.raises(ValueError, match="group.max.size"):
        GroupCoordinatorConfig.from_properties({"group.max.size": "many"})


@pytest.mark.parametrize("overrides, message", [
    ({"group.consumer.assignors": "sticky"}, "group.consumer.assignors must list uniform and/or range"),
    ({"group.consumer.assignors": ""}, "group.consumer.assignors must list uniform and/or range"),
    ({"group.consumer.heartbeat.interval.ms": "15000", "group.consumer.session.timeout.ms": "15000",
      "group.consumer.min.session.timeout.ms": "1000"},
     "^group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms$"),
    ({"group.consumer.session.timeout.ms": "6000"},
     "^group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms$"),
    ({"group.consumer.session.timeout.ms": "70000"},
     "^group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms$"),
    ({"group.consumer.max.session.timeout.ms": "40000"},
     "^group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session"),
    ({"group.consumer.heartbeat.interval.ms": "500"},
     "^group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat"),
    ({"group.consumer.heartbeat.interval.ms": "20000"},
     "^group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat"),
    ({"group.consumer.min.heartbeat.interval.ms": "0"}, "^group.consumer.min.heartbeat.interval.ms: must be at least 1"),
    ({"group.consumer.max.size": "0"}, "^group.consumer.max.size: must be at least 1, got 0$"),
])
def test_bad_consumer_protocol_settings_stop_the_broker(overrides, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(overrides)


def test_kafkas_assignor_class_names_are_accepted():
    config = BrokerConfig({"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor"})
    assert consumer_assignors(",".join(config.get("group.consumer.assignors"))) == ("range",)


def test_consumer_protocol_bounds_are_kafkas_and_can_be_lowered_for_short_sessions():
    config = BrokerConfig({})
    assert [config.get(f"group.consumer.{key}.ms") for key in (
        "session.timeout", "min.session.timeout", "max.session.timeout",
        "heartbeat.interval", "min.heartbeat.interval", "max.heartbeat.interval")] == [45000, 45000, 60000,
                                                                                      5000, 5000, 15000]
    short = BrokerConfig({"group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000",
                          "group.consumer.heartbeat.interval.ms": "500",
                          "group.consumer.min.heartbeat.interval.ms": "500"})
    assert short.get("group.consumer.session.timeout.ms") == 6000
