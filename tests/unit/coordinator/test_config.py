"""The coordinator's broker keys and defaults."""

from __future__ import annotations

import pytest

from gregor.coordinator import GroupCoordinatorConfig


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
