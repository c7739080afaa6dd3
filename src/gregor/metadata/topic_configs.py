"""Topic-level configuration: Kafka's keys, types, defaults, broker synonyms and validation.

A topic's effective value comes from the first of: the topic's own override (a ConfigRecord on
the TOPIC resource), this broker's dynamic config, the cluster-wide dynamic broker default, the
static broker config (server.properties), Kafka's default. Broker-level keys use Kafka's names
(`log.retention.ms`, `log.retention.hours`, ...), converted to the topic's unit. Defaults are
those of Apache Kafka 3.9 (4.0 moved `message.timestamp.after.max.ms` to one hour and dropped
`message.downconversion.enable`).
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from typing import Mapping

LONG_MAX = 9223372036854775807
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1
LONG_MIN = -(2 ** 63)
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_MS_PER = {"ms": 1, "minutes": 60_000, "hours": 3_600_000}


class ConfigType(enum.IntEnum):
    """DescribeConfigs' ConfigType."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigs' ConfigSource (Kafka's DescribeConfigsResponse.ConfigSource)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


@dataclass(frozen=True)
class BrokerSynonym:
    """A broker-level key for a topic key; `unit_ms` converts its value (hours → ms)."""

    name: str
    unit_ms: int = 1


@dataclass(frozen=True)
class TopicConfigKey:
    name: str
    type: ConfigType
    default: str
    synonyms: tuple[BrokerSynonym, ...]
    documentation: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()


def _key(name: str, type_: ConfigType, default: str, synonyms: tuple[str, ...], documentation: str,
         minimum: float | None = None, maximum: float | None = None,
         choices: tuple[str, ...] = ()) -> TopicConfigKey:
    parsed = tuple(BrokerSynonym(s, _MS_PER[s.rsplit(".", 1)[1]] if s.rsplit(".", 1)[1] in _MS_PER else 1)
                   for s in synonyms)
    return TopicConfigKey(name, type_, default, parsed, documentation, minimum, maximum, choices)


_L, _I, _D, _B, _S, _LIST = (ConfigType.LONG, ConfigType.INT, ConfigType.DOUBLE, ConfigType.BOOLEAN,
                             ConfigType.STRING, ConfigType.LIST)
_KEYS = (
    _key("cleanup.policy", _LIST, "delete", ("log.cleanup.policy",),
         "Retention policy for old segments: delete, compact, or both.", choices=("compact", "delete")),
    _key("compression.type", _S, "producer", ("compression.type",),
         "Final compression of the topic's data; 'producer' keeps the producer's codec.",
         choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _key("delete.retention.ms", _L, "86400000", ("log.cleaner.delete.retention.ms",),
         "How long delete tombstones are kept on compacted topics.", minimum=0),
    _key("file.delete.delay.ms", _L, "60000", ("log.segment.delete.delay.ms",),
         "Time to wait before deleting a file from the filesystem.", minimum=0),
    _key("flush.messages", _L, str(LONG_MAX), ("log.flush.interval.messages",),
         "Force an fsync after this many messages.", minimum=1),
    _key("flush.ms", _L, str(LONG_MAX), ("log.flush.interval.ms",),
         "Force an fsync after this much time.", minimum=0),
    _key("index.interval.bytes", _I, "4096", ("log.index.interval.bytes",),
         "Bytes of log between two offset-index entries.", minimum=0),
    _key("max.compaction.lag.ms", _L, str(LONG_MAX), ("log.cleaner.max.compaction.lag.ms",),
         "Maximum time a message stays ineligible for compaction.", minimum=1),
    _key("max.message.bytes", _I, "1048588", ("message.max.bytes",),
         "Largest record batch size allowed.", minimum=0),
    _key("message.downconversion.enable", _B, "true", ("log.message.downconversion.enable",),
         "Whether fetches from old clients may down-convert message formats."),
    _key("message.timestamp.after.max.ms", _L, str(LONG_MAX), ("log.message.timestamp.after.max.ms",),
         "How far a CreateTime timestamp may be ahead of the broker's clock.", minimum=0),
    _key("message.timestamp.before.max.ms", _L, str(LONG_MAX), ("log.message.timestamp.before.max.ms",),
         "How far a CreateTime timestamp may be behind the broker's clock.", minimum=0),
    _key("message.timestamp.difference.max.ms", _L, str(LONG_MAX),
         ("log.message.timestamp.difference.max.ms",),
         "Deprecated: the largest difference between a CreateTime timestamp and the broker's clock.",
         minimum=0),
    _key("message.timestamp.type", _S, "CreateTime", ("log.message.timestamp.type",),
         "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).",
         choices=("CreateTime", "LogAppendTime")),
    _key("min.cleanable.dirty.ratio", _D, "0.5", ("log.cleaner.min.cleanable.ratio",),
         "Dirty ratio of the log above which the cleaner compacts it.", minimum=0, maximum=1),
    _key("min.compaction.lag.ms", _L, "0", ("log.cleaner.min.compaction.lag.ms",),
         "Minimum time a message stays uncompacted.", minimum=0),
    _key("min.insync.replicas", _I, "1", ("min.insync.replicas",),
         "Fewest in-sync replicas that must acknowledge an acks=all write.", minimum=1),
    _key("preallocate", _B, "false", ("log.preallocate",),
         "Whether new segment files are preallocated on disk."),
    _key("retention.bytes", _L, "-1", ("log.retention.bytes",),
         "Size a partition may grow to before old segments are deleted; -1 for no limit."),
    _key("retention.ms", _L, "604800000", ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
         "How long a log is kept before old segments are deleted; -1 for no limit.", minimum=-1),
    _key("segment.bytes", _I, "1073741824", ("log.segment.bytes",),
         "Size of one segment file of the log.", minimum=14),
    _key("segment.index.bytes", _I, "10485760", ("log.index.size.max.bytes",),
         "Size of the index of one segment.", minimum=4),
    _key("segment.jitter.ms", _L, "0", ("log.roll.jitter.ms", "log.roll.jitter.hours"),
         "Maximum random jitter subtracted from segment.ms.", minimum=0),
    _key("segment.ms", _L, "604800000", ("log.roll.ms", "log.roll.hours"),
         "Time after which a segment is rolled even if not full.", minimum=1),
    _key("unclean.leader.election.enable", _B, "false", ("unclean.leader.election.enable",),
         "Whether a replica outside the ISR may become leader, at the risk of data loss."),
)

TOPIC_CONFIG_KEYS: Mapping[str, TopicConfigKey] = {key.name: key for key in _KEYS}
BROKER_SYNONYMS: Mapping[str, tuple[TopicConfigKey, BrokerSynonym]] = {
    synonym.name: (key, synonym) for key in _KEYS for synonym in key.synonyms}


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One row of a DescribeConfigs answer for a topic."""

    name: str
    value: str
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    type: ConfigType
    documentation: str

    @property
    def is_default(self) -> bool:
        """DescribeConfigs v0's flag: the value is not set anywhere."""
        return self.source == ConfigSource.DEFAULT_CONFIG


def _invalid(name: str, value: str, reason: str) -> str:
    return f"Invalid value {value} for configuration {name}: {reason}"


def _check(key: TopicConfigKey, name: str, value: str) -> str | None:
    text = value.strip()
    if key.type in (ConfigType.INT, ConfigType.LONG):
        if not _INTEGER.match(text):
            return _invalid(name, value, f"Not a number of type {key.type.name}")
        number: float = int(text)
        low, high = (INT_MIN, INT_MAX) if key.type == ConfigType.INT else (LONG_MIN, LONG_MAX)
        if not low <= number <= high:
            return _invalid(name, value, f"Not a number of type {key.type.name}")
    elif key.type == ConfigType.DOUBLE:
        try:
            number = float(text)
        except ValueError:
            return _invalid(name, value, "Not a number of type DOUBLE")
        if math.isnan(number):
            return _invalid(name, value, "Not a number of type DOUBLE")
    elif key.type == ConfigType.BOOLEAN:
        if text.lower() not in ("true", "false"):
            return _invalid(name, value, "Expected value to be either true or false")
        return None
    else:
        items = [item.strip() for item in text.split(",") if item.strip()] if key.type == ConfigType.LIST else [text]
        if key.choices and any(item not in key.choices for item in items):
            return _invalid(name, value, f"String must be one of: {', '.join(key.choices)}")
        return None
    if key.minimum is not None and number < key.minimum:
        return _invalid(name, value, f"Value must be at least {key.minimum:g}")
    if key.maximum is not None and number > key.maximum:
        return _invalid(name, value, f"Value must be no more than {key.maximum:g}")
    return None


def validate_topic_config(name: str, value: str | None) -> str | None:
    """Why `name=value` is not a valid topic config, or None. A None value (delete) is valid."""
    key = TOPIC_CONFIG_KEYS.get(name)
    if key is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return None
    return _check(key, name, value)


def validate_topic_configs(configs: Mapping[str, str | None]) -> str | None:
    """Each key valid, and the cross-key rules of Kafka's LogConfig.validate."""
    for name, value in configs.items():
        reason = validate_topic_config(name, value)
        if reason:
            return reason
    low = configs.get("min.compaction.lag.ms")
    high = configs.get("max.compaction.lag.ms")
    if low is not None and high is not None and int(low) > int(high):
        return (f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                f"max.compaction.lag.ms ({high})")
    return None


def validate_broker_log_config(name: str, value: str | None) -> str | None:
    """Validation of a dynamic broker config that is the broker synonym of a topic config."""
    found = BROKER_SYNONYMS.get(name)
    if found is None:
        return f"Cannot update broker config {name} dynamically"
    if value is None:
        return None
    key, synonym = found
    if synonym.unit_ms != 1:
        text = value.strip()
        if not _INTEGER.match(text) or not LONG_MIN <= int(text) <= LONG_MAX:
            return _invalid(name, value, "Not a number of type LONG")
        return None
    return _check(key, name, value)


def _topic_value(synonym: BrokerSynonym, value: str) -> str:
    if synonym.unit_ms == 1:
        return value.strip()
    millis = int(value.strip()) * synonym.unit_ms
    return str(millis if millis >= 0 else -1)


def _layers(broker_config: Mapping[str, str], dynamic_broker_config: Mapping[str, str] | None,
            dynamic_default_config: Mapping[str, str] | None) -> tuple[tuple[Mapping[str, str], ConfigSource], ...]:
    return ((dynamic_broker_config or {}, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (dynamic_default_config or {}, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (broker_config, ConfigSource.STATIC_BROKER_CONFIG))


def describe_topic_config(topic_overrides: Mapping[str, str], broker_config: Mapping[str, str],
                          dynamic_broker_config: Mapping[str, str] | None = None,
                          dynamic_default_config: Mapping[str, str] | None = None) -> list[ConfigEntry]:
    """Every topic config key, sorted by name, with its value, source and synonyms.

    `broker_config` holds the broker-level keys set in server.properties (only those set
    explicitly, so defaults report DEFAULT_CONFIG); the dynamic layers come from the image's
    BROKER resource configs (`image.broker_config(node_id)` and `image.broker_config("")`).
    Synonyms are listed in precedence order, as Kafka does.
    """
    layers = _layers(broker_config, dynamic_broker_config, dynamic_default_config)
    entries = []
    for key in _KEYS:
        synonyms: list[ConfigSynonym] = []
        resolved: tuple[str, ConfigSource] | None = None
        if key.name in topic_overrides:
            synonyms.append(ConfigSynonym(key.name, topic_overrides[key.name], ConfigSource.TOPIC_CONFIG))
            resolved = (topic_overrides[key.name], ConfigSource.TOPIC_CONFIG)
        for values, source in layers:
            for synonym in key.synonyms:
                if synonym.name in values:
                    raw = values[synonym.name]
                    synonyms.append(ConfigSynonym(synonym.name, raw, source))
                    if resolved is None:
                        resolved = (_topic_value(synonym, raw), source)
        synonyms.append(ConfigSynonym(key.synonyms[0].name, key.default, ConfigSource.DEFAULT_CONFIG))
        value, source = resolved if resolved is not None else (key.default, ConfigSource.DEFAULT_CONFIG)
        entries.append(ConfigEntry(key.name, value, source, read_only=False, is_sensitive=False,
                                   synonyms=tuple(synonyms), type=key.type, documentation=key.documentation))
    return entries


def effective_topic_config(topic_overrides: Mapping[str, str], broker_config: Mapping[str, str],
                           dynamic_broker_config: Mapping[str, str] | None = None,
                           dynamic_default_config: Mapping[str, str] | None = None) -> dict[str, str]:
    """Topic config name → the value in force (what a partition log is configured with)."""
    return {entry.name: entry.value for entry in describe_topic_config(
        topic_overrides, broker_config, dynamic_broker_config, dynamic_default_config)}
