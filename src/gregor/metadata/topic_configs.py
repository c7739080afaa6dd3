"""Topic-level configuration keys: Kafka's names, types, broker synonyms and validation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class TopicConfigKey:
    name: str
    type: str  # long, int, double, boolean, string, list
    broker_synonym: str | None
    choices: tuple[str, ...] = ()
    minimum: float | None = None


_KEYS = (
    TopicConfigKey("cleanup.policy", "list", "log.cleanup.policy", ("delete", "compact")),
    TopicConfigKey("compression.type", "string", "compression.type",
                   ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    TopicConfigKey("delete.retention.ms", "long", "log.cleaner.delete.retention.ms", minimum=0),
    TopicConfigKey("file.delete.delay.ms", "long", "log.segment.delete.delay.ms", minimum=0),
    TopicConfigKey("flush.messages", "long", "log.flush.interval.messages", minimum=1),
    TopicConfigKey("flush.ms", "long", "log.flush.interval.ms", minimum=0),
    TopicConfigKey("index.interval.bytes", "int", "log.index.interval.bytes", minimum=0),
    TopicConfigKey("max.compaction.lag.ms", "long", "log.cleaner.max.compaction.lag.ms", minimum=1),
    TopicConfigKey("max.message.bytes", "int", "message.max.bytes", minimum=0),
    TopicConfigKey("message.downconversion.enable", "boolean", "log.message.downconversion.enable"),
    TopicConfigKey("message.timestamp.after.max.ms", "long", "log.message.timestamp.after.max.ms", minimum=0),
    TopicConfigKey("message.timestamp.before.max.ms", "long", "log.message.timestamp.before.max.ms", minimum=0),
    TopicConfigKey("message.timestamp.difference.max.ms", "long",
                   "log.message.timestamp.difference.max.ms", minimum=0),
    TopicConfigKey("message.timestamp.type", "string", "log.message.timestamp.type",
                   ("CreateTime", "LogAppendTime")),
    TopicConfigKey("min.cleanable.dirty.ratio", "double", "log.cleaner.min.cleanable.ratio", minimum=0),
    TopicConfigKey("min.compaction.lag.ms", "long", "log.cleaner.min.compaction.lag.ms", minimum=0),
    TopicConfigKey("min.insync.replicas", "int", "min.insync.replicas", minimum=1),
    TopicConfigKey("preallocate", "boolean", "log.preallocate"),
    TopicConfigKey("retention.bytes", "long", "log.retention.bytes"),
    TopicConfigKey("retention.ms", "long", "log.retention.ms", minimum=-1),
    TopicConfigKey("segment.bytes", "int", "log.segment.bytes", minimum=14),
    TopicConfigKey("segment.index.bytes", "int", "log.index.size.max.bytes", minimum=4),
    TopicConfigKey("segment.jitter.ms", "long", "log.roll.jitter.ms", minimum=0),
    TopicConfigKey("segment.ms", "long", "log.roll.ms", minimum=1),
    TopicConfigKey("unclean.leader.election.enable", "boolean", "unclean.leader.election.enable"),
)
TOPIC_CONFIG_KEYS: dict[str, TopicConfigKey] = {key.name: key for key in _KEYS}

STATIC_DEFAULTS = {
    "file.delete.delay.ms": "60000", "max.compaction.lag.ms": "9223372036854775807",
    "message.downconversion.enable": "true", "min.compaction.lag.ms": "0", "preallocate": "false",
    "segment.jitter.ms": "0",
}


def validate_topic_config(name: str, value: str | None) -> str | None:
    """A readable reason why `name=value` is not a valid topic config, or None."""
    key = TOPIC_CONFIG_KEYS.get(name)
    if key is None:
        return f"unknown topic config '{name}'"
    if value is None:
        return None
    try:
        if key.type in ("int", "long"):
            number: float = int(value)
        elif key.type == "double":
            number = float(value)
        elif key.type == "boolean":
            if value.lower() not in ("true", "false"):
                return f"{name} must be true or false, not '{value}'"
            return None
        else:
            number = 0
    except ValueError:
        return f"{name} must be a {key.type}, not '{value}'"
    if key.type == "int" and not -2**31 <= number < 2**31:
        return f"{name}={value} does not fit in an int"
    if key.minimum is not None and key.type in ("int", "long", "double") and number < key.minimum:
        return f"{name} must be at least {key.minimum:g}, not {value}"
    if key.choices:
        items = [item.strip() for item in value.split(",")] if key.type == "list" else [value]
        bad = [item for item in items if item not in key.choices]
        if bad or not items:
            return f"{name} must be one of {', '.join(key.choices)}, not '{value}'"
    return None


def effective_topic_config(overrides: Mapping[str, str], broker_defaults: Mapping[str, str]) -> dict[str, tuple[str, bool]]:
    """name → (value, is_topic_override) for every topic config key."""
    result = {}
    for name in TOPIC_CONFIG_KEYS:
        if name in overrides:
            result[name] = (overrides[name], True)
        else:
            result[name] = (broker_defaults.get(name, STATIC_DEFAULTS.get(name, "")), False)
    return result
