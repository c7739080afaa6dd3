"""AlterConfigs (replace all) and IncrementalAlterConfigs (SET/DELETE/APPEND/SUBTRACT)."""

from __future__ import annotations

import pytest

from gregor.controller.operations import (
    AlterConfigOp, AlterConfigsResource, ConfigOp, CreatableTopic, IncrementalAlterConfigsResource,
)
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from gregor.metadata.topic_configs import validate_topic_configs
from gregor.protocol.error_codes import ErrorCode
from tests.unit.controller.conftest import NOW

SET, DELETE, APPEND, SUBTRACT = AlterConfigOp


@pytest.fixture
def topic_node(node):
    node.commit(node.controller.create_topics([CreatableTopic("t", configs={"retention.ms": "5",
                                                                            "segment.ms": "9"})]), NOW)
    return node


def incremental(node, *ops, resource_type=TOPIC_RESOURCE, name="t", validate_only=False):
    [result] = node.commit(node.controller.incremental_alter_configs(
        [IncrementalAlterConfigsResource(resource_type, name, [ConfigOp(*op) for op in ops])], validate_only), NOW)
    return result


def test_alter_configs_replaces_the_whole_set(topic_node):
    [result] = topic_node.commit(topic_node.controller.alter_configs(
        [AlterConfigsResource(TOPIC_RESOURCE, "t", {"retention.ms": "7", "flush.ms": "1"})]), NOW)
    assert result.error == ErrorCode.NONE
    assert dict(topic_node.image.topic_config("t")) == {"retention.ms": "7", "flush.ms": "1"}


def test_alter_configs_errors_and_validate_only(topic_node):
    before = topic_node.image
    results = topic_node.commit(topic_node.controller.alter_configs([
        AlterConfigsResource(TOPIC_RESOURCE, "t", {"retention.ms": "x"}),
        AlterConfigsResource(TOPIC_RESOURCE, "missing", {}),
        AlterConfigsResource(TOPIC_RESOURCE, "", {}),
        AlterConfigsResource(8, "root", {}),
        AlterConfigsResource(BROKER_RESOURCE, "one", {}),
        AlterConfigsResource(TOPIC_RESOURCE, "t", {"retention.ms": "1"}),
    ], validate_only=True), NOW)
    assert [r.error for r in results] == [
        ErrorCode.INVALID_CONFIG, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, ErrorCode.NONE]
    assert topic_node.image is before


def test_incremental_set_and_delete(topic_node):
    assert incremental(topic_node, ("retention.ms", SET, "8"), ("segment.ms", DELETE)).error == ErrorCode.NONE
    assert dict(topic_node.image.topic_config("t")) == {"retention.ms": "8"}


def test_incremental_append_and_subtract_on_lists(topic_node):
    assert incremental(topic_node, ("cleanup.policy", APPEND, "compact")).error == ErrorCode.NONE
    assert topic_node.image.topic_config("t")["cleanup.policy"] == "delete,compact"
    assert incremental(topic_node, ("cleanup.policy", APPEND, "compact")).error == ErrorCode.NONE
    assert topic_node.image.topic_config("t")["cleanup.policy"] == "delete,compact"
    assert incremental(topic_node, ("cleanup.policy", SUBTRACT, "delete")).error == ErrorCode.NONE
    assert topic_node.image.topic_config("t")["cleanup.policy"] == "compact"
    assert incremental(topic_node, ("cleanup.policy", SUBTRACT, "compact")).error == ErrorCode.NONE
    assert topic_node.image.topic_config("t")["cleanup.policy"] == ""


def test_an_empty_cleanup_policy_is_valid():
    """Kafka accepts an empty list (neither deletion nor compaction: the log is kept)."""
    assert validate_topic_configs({"cleanup.policy": ""}) is None


@pytest.mark.parametrize("ops,code", [
    ([("retention.ms", APPEND, "1")], ErrorCode.INVALID_CONFIG),
    ([("retention.ms", SET, None)], ErrorCode.INVALID_CONFIG),
    ([("retention.ms", SET, "-7")], ErrorCode.INVALID_CONFIG),
    ([("bogus", SET, "1")], ErrorCode.INVALID_CONFIG),
    ([("retention.ms", SET, "1"), ("retention.ms", DELETE)], ErrorCode.INVALID_REQUEST),
    ([("retention.ms", 9, "1")], ErrorCode.INVALID_REQUEST),
    ([("min.compaction.lag.ms", SET, "10"), ("max.compaction.lag.ms", SET, "5")], ErrorCode.INVALID_CONFIG),
])
def test_incremental_errors_change_nothing(topic_node, ops, code):
    before = topic_node.image
    result = incremental(topic_node, *ops)
    assert result.error == code and result.message
    assert topic_node.image is before


def test_unchanged_values_write_no_records(topic_node):
    result = topic_node.controller.incremental_alter_configs(
        [IncrementalAlterConfigsResource(TOPIC_RESOURCE, "t", [ConfigOp("retention.ms", SET, "5")])])
    assert result.records == ()


def test_broker_resources(topic_node):
    assert incremental(topic_node, ("log.retention.ms", SET, "100"), resource_type=BROKER_RESOURCE,
                       name="1").error == ErrorCode.NONE
    assert incremental(topic_node, ("log.roll.hours", SET, "2"), resource_type=BROKER_RESOURCE,
                       name="").error == ErrorCode.NONE
    assert dict(topic_node.image.broker_config(1)) == {"log.retention.ms": "100"}
    assert dict(topic_node.image.broker_config("")) == {"log.roll.hours": "2"}
    bad = incremental(topic_node, ("listeners", SET, "x"), resource_type=BROKER_RESOURCE, name="1")
    assert bad.error == ErrorCode.INVALID_CONFIG
    append = incremental(topic_node, ("log.cleanup.policy", APPEND, "compact"), resource_type=BROKER_RESOURCE,
                         name="1")
    assert append.error == ErrorCode.INVALID_CONFIG


def test_deleting_the_topic_drops_its_configs(topic_node):
    topic_node.commit(topic_node.controller.delete_topics(["t"]), NOW)
    assert (TOPIC_RESOURCE, "t") not in topic_node.image.configs
