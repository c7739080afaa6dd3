"""Topic config validation and resolution follow Kafka's LogConfig and DescribeConfigs."""

from __future__ import annotations

import pytest

from gregor.metadata.topic_configs import (
    TOPIC_CONFIG_KEYS, ConfigSource, ConfigType, describe_topic_config, effective_topic_config,
    validate_broker_log_config, validate_topic_config, validate_topic_configs,
)


@pytest.mark.parametrize("name,value", [
    ("cleanup.policy", "delete"), ("cleanup.policy", "compact,delete"), ("cleanup.policy", "delete, compact"),
    ("compression.type", "zstd"), ("compression.type", "producer"), ("message.timestamp.type", "LogAppendTime"),
    ("retention.ms", "-1"), ("retention.ms", "+5"), ("segment.bytes", "14"), ("min.cleanable.dirty.ratio", "1"),
    ("min.cleanable.dirty.ratio", "0.25"), ("preallocate", "TRUE"), ("retention.bytes", "-100"),
    ("min.insync.replicas", "2"), ("flush.messages", "9223372036854775807"), ("retention.ms", None),
])
def test_valid_values(name, value):
    assert validate_topic_config(name, value) is None


@pytest.mark.parametrize("name,value,reason", [
    ("no.such.key", "1", "Unknown topic config name: no.such.key"),
    ("cleanup.policy", "remove", "String must be one of: compact, delete"),
    ("cleanup.policy", "compact,remove", "String must be one of"),
    ("compression.type", "brotli", "String must be one of"),
    ("message.timestamp.type", "createtime", "String must be one of: CreateTime, LogAppendTime"),
    ("retention.ms", "-2", "Value must be at least -1"),
    ("retention.ms", "1_000", "Not a number of type LONG"),
    ("retention.ms", "ten", "Not a number of type LONG"),
    ("segment.bytes", "13", "Value must be at least 14"),
    ("segment.bytes", "2147483648", "Not a number of type INT"),
    ("flush.messages", "9223372036854775808", "Not a number of type LONG"),
    ("min.cleanable.dirty.ratio", "1.5", "Value must be no more than 1"),
    ("min.cleanable.dirty.ratio", "nan", "Not a number of type DOUBLE"),
    ("min.insync.replicas", "0", "Value must be at least 1"),
    ("preallocate", "yes", "Expected value to be either true or false"),
])
def test_invalid_values(name, value, reason):
    message = validate_topic_config(name, value)
    assert message is not None and reason in message


def test_cross_key_rule_on_compaction_lags():
    assert "min.compaction.lag.ms" in validate_topic_configs({"min.compaction.lag.ms": "10",
                                                              "max.compaction.lag.ms": "5"})
    assert validate_topic_configs({"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "10"}) is None


def test_every_key_has_a_valid_default_and_a_broker_synonym():
    for key in TOPIC_CONFIG_KEYS.values():
        assert validate_topic_config(key.name, key.default) is None, key.name
        assert key.synonyms and key.documentation


def test_resolution_order_topic_dynamic_broker_default_static_default():
    values = effective_topic_config({"segment.bytes": "100"},
                                    {"log.segment.bytes": "200", "log.retention.hours": "1", "log.roll.ms": "9"},
                                    {"log.roll.ms": "7"}, {"log.roll.ms": "8", "log.flush.interval.ms": "3"})
    assert values["segment.bytes"] == "100"
    assert values["retention.ms"] == "3600000"
    assert values["segment.ms"] == "7"
    assert values["flush.ms"] == "3"
    assert values["cleanup.policy"] == "delete" and values["max.message.bytes"] == "1048588"
    assert set(values) == set(TOPIC_CONFIG_KEYS)


def test_millisecond_synonym_wins_over_hours_and_negative_means_unlimited():
    assert effective_topic_config({}, {"log.retention.ms": "5", "log.retention.hours": "1"})["retention.ms"] == "5"
    assert effective_topic_config({}, {"log.retention.hours": "-1"})["retention.ms"] == "-1"


def test_describe_reports_sources_and_synonyms_in_precedence_order():
    entries = {e.name: e for e in describe_topic_config({"retention.ms": "5"}, {"log.retention.hours": "2"},
                                                        {"log.retention.ms": "7"})}
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.type) == ("5", ConfigSource.TOPIC_CONFIG, ConfigType.LONG)
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "5", ConfigSource.TOPIC_CONFIG),
        ("log.retention.ms", "7", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("log.retention.hours", "2", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)]
    assert not retention.read_only and not retention.is_sensitive and not retention.is_default
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source, policy.is_default, policy.type) == (
        "delete", ConfigSource.DEFAULT_CONFIG, True, ConfigType.LIST)
    assert int(ConfigSource.STATIC_BROKER_CONFIG) == 4 and int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) == 3


def test_dynamic_broker_configs_are_topic_synonyms():
    assert validate_broker_log_config("log.retention.ms", "100") is None
    assert validate_broker_log_config("log.retention.hours", "3") is None
    assert "Value must be at least 14" in validate_broker_log_config("log.segment.bytes", "1")
    assert "Cannot update" in validate_broker_log_config("listeners", "PLAINTEXT://:1")
    assert validate_broker_log_config("log.cleanup.policy", None) is None
