"""Per-group configs (KIP-848 GroupConfig): checked by the controller against the broker's
bounds, stored as GROUP ConfigRecords, used from the group's next heartbeat (consumer and share
groups) or acquisition (a share group's record lock)."""

from __future__ import annotations

import pytest

from gregor.controller.config_control import ConfigurationControl
from gregor.coordinator.share.share_group import ShareGroupConfig, ShareGroupCoordinator
from gregor.coordinator.share.share_partition import SharePartition, SharePartitionConfig
from gregor.controller.operations import AlterConfigOp, ConfigOp
from gregor.metadata.group_configs import (
    BROKER_GROUP_DEFAULTS, GROUP_RESOURCE, SHARE_BROKER_DEFAULTS, validate_group_configs,
)
from gregor.metadata.image import MetadataImage
from gregor.protocol.error_codes import ErrorCode
from tests.unit.coordinator.consumer_harness import T1, ConsumerHarness

SESSION, INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
BROKER = {**BROKER_GROUP_DEFAULTS, **SHARE_BROKER_DEFAULTS}


@pytest.mark.parametrize("overrides, reason", [
    ({SESSION: "50000"}, None),
    ({SESSION: "60000", INTERVAL: "15000"}, None),
    ({SESSION: "44999"}, "consumer.session.timeout.ms must be greater than or equal to "
                         "group.consumer.min.session.timeout.ms"),
    ({SESSION: "60001"}, "consumer.session.timeout.ms must be less than or equal to "
                         "group.consumer.max.session.timeout.ms"),
    ({INTERVAL: "4999"}, "consumer.heartbeat.interval.ms must be greater than or equal to "
                         "group.consumer.min.heartbeat.interval.ms"),
    ({INTERVAL: "15001"}, "consumer.heartbeat.interval.ms must be less than or equal to "
                          "group.consumer.max.heartbeat.interval.ms"),
    ({SESSION: "soon"}, "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ({"consumer.rebalance.timeout.ms": "1"}, "Unknown group config name: consumer.rebalance.timeout.ms"),
    ({"share.record.lock.duration.ms": "15000", "share.auto.offset.reset": "earliest"}, None),
    ({"share.record.lock.duration.ms": "999"}, "share.record.lock.duration.ms must be between 1000 and 3600000"),
    ({"share.session.timeout.ms": "4000"},
     "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"),
    ({"share.heartbeat.interval.ms": "99"}, "share.heartbeat.interval.ms must be at least 100"),
    ({"share.auto.offset.reset": "none"},
     "Invalid value none for configuration share.auto.offset.reset: String must be one of: latest, earliest"),
])
def test_values_are_bounded_by_the_broker_keys(overrides, reason):
    assert validate_group_configs(overrides, BROKER) == reason


def test_the_session_must_outlast_the_interval_with_lowered_bounds():
    bounds = {**BROKER, "group.consumer.min.session.timeout.ms": 1000}
    assert validate_group_configs({SESSION: "5000"}, bounds) == (
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")


def test_the_controller_records_a_group_config_and_refuses_a_bad_one():
    control = ConfigurationControl(lambda _key, _value: None)
    image = MetadataImage()
    done = control.incremental_alter(image, GROUP_RESOURCE, "g", [ConfigOp(SESSION, AlterConfigOp.SET, "50000")])
    assert done.response.error is ErrorCode.NONE
    assert [(r.resource_type, r.resource_name, r.name, r.value) for r in done.records] == [
        (GROUP_RESOURCE, "g", SESSION, "50000")]
    refused = control.incremental_alter(image, GROUP_RESOURCE, "g", [ConfigOp(INTERVAL, AlterConfigOp.SET, "1")])
    assert (refused.response.error, refused.records) == (ErrorCode.INVALID_CONFIG, ())
    nameless = control.incremental_alter(image, GROUP_RESOURCE, "", [ConfigOp(SESSION, AlterConfigOp.SET, "50000")])
    assert nameless.response.error is ErrorCode.INVALID_REQUEST
    lowered = ConfigurationControl(lambda _key, _value: None, {**BROKER, "group.consumer.min.session.timeout.ms": 1000})
    assert lowered.incremental_alter(image, GROUP_RESOURCE, "g", [
        ConfigOp(SESSION, AlterConfigOp.SET, "6000")]).response.error is ErrorCode.NONE


def test_a_groups_configs_apply_from_its_next_heartbeat():
    overrides: dict[str, dict[str, str]] = {}
    h = ConsumerHarness()
    h.set_topics(t1=2)
    h.coordinator.use_group_configs(lambda group_id: overrides.get(group_id, {}))
    assert h.cg("a", 0).heartbeat_interval_ms == 5000
    overrides["g"] = {SESSION: "50000", INTERVAL: "7000"}
    assert h.cg("a", 1, owned={T1: frozenset({0, 1})}).heartbeat_interval_ms == 7000
    assert h.cg("b", 0, group="other").heartbeat_interval_ms == 5000, "other groups keep the broker's"
    h.advance(45000)
    assert list(h.coordinator.consumer_groups["g"].members) == ["a"], "its session is the group's 50 s"
    assert list(h.coordinator.consumer_groups["other"].members) == []
    h.advance(5000)
    assert list(h.coordinator.consumer_groups["g"].members) == []


def test_a_share_groups_session_interval_and_lock_duration_are_its_own():
    overrides = {"g": {"share.session.timeout.ms": "2000", "share.heartbeat.interval.ms": "700"}}
    share = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=45000, heartbeat_interval_ms=5000))
    share.group_config_overrides = lambda group_id: overrides.get(group_id, {})
    joined = share.heartbeat("g", "a", 0, None, ["t"], "client", "host", {"t": 1}, 0)
    other = share.heartbeat("h", "b", 0, None, ["t"], "client", "host", {"t": 1}, 0)
    assert (joined.heartbeat_interval_ms, other.heartbeat_interval_ms) == (700, 5000)
    assert share.expire(2000) == [("g", "a")]
    partition = SharePartition(SharePartitionConfig(lock_duration_ms=30000), 0, 0)
    partition.acquire("a", [(0, 0, False)], 10, 100, lock_duration_ms=15000)
    assert partition.next_deadline() == 15100
