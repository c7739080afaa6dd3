"""The source and sink options of Spark's Kafka connector, parsed and checked before a query runs.

Spark hands options over case-insensitively; errors name the option in its documented spelling.
An unknown option is refused (a misspelt `startingOffset` must not silently read from the default
position). `kafka.*` options go to Gregor's client without the prefix and are checked against its
key table here, on the driver, so a bad one fails the query at start and not in an executor.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from gregor.client import TopicPartition
from gregor.client.config import ConfigError, Role, parse_config
from gregor.spark.bounds import Bound, ByTimestamp, Earliest, Latest, SpecificOffsets
from gregor.spark.errors import OptionError
from gregor.spark.offsets import EARLIEST, LATEST, parse_json
from gregor.spark.subscription import Subscription

_SOURCE_OPTIONS = (
    "kafka.bootstrap.servers", "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets",
    "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy", "endingTimestamp",
    "endingOffsetsByTimestamp", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
    "failOnDataLoss", "includeHeaders", "kafkaConsumer.pollTimeoutMs",
)
_SINK_OPTIONS = ("kafka.bootstrap.servers", "topic", "deliveryGuarantee", "transactionalIdPrefix")
AT_LEAST_ONCE, EXACTLY_ONCE = "at-least-once", "exactly-once"
#: The transaction timeout an exactly-once sink asks for unless kafka.transaction.timeout.ms is set:
#: a batch's transactions stay open from its tasks' first record to the driver's commit.
EXACTLY_ONCE_TRANSACTION_TIMEOUT_MS = 900_000
_ENGINE_OPTIONS = ("path", "checkpointLocation", "queryName")
"""Options Spark itself may pass along to a data source; they mean nothing to the connector."""

_REFUSED_CLIENT_KEYS = {
    Role.CONSUMER: {
        "auto.offset.reset": "set startingOffsets instead",
        "enable.auto.commit": "the source never commits offsets; the query's checkpoint tracks them",
        "key.deserializer": "keys are always binary; deserialize them with DataFrame operations",
        "value.deserializer": "values are always binary; deserialize them with DataFrame operations",
        "interceptor.classes": "interceptors would see only the records of one Spark task",
    },
    Role.PRODUCER: {
        "key.serializer": "keys are written as binary; cast the key column to string or binary",
        "value.serializer": "values are written as binary; cast the value column to string or binary",
        "transactional.id": "the sink derives one per task; set deliveryGuarantee=exactly-once and "
                            "transactionalIdPrefix",
        "interceptor.classes": "interceptors would see only the records of one Spark task",
    },
}
_SECURITY_KEYS = frozenset({"security.protocol", "sasl.mechanism"})
"""Keys whose check alone fails for want of the others (a SASL protocol needs a login)."""
_DURATION = re.compile(r"\s*(\d+)\s*(us|ms|s|m|min|h|d)?\s*", re.IGNORECASE)
_DURATION_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60000, "min": 60000, "h": 3600000, "d": 86400000}


@dataclass(frozen=True)
class ReadSettings:
    """What an executor needs to read one offset range; travels pickled inside each InputPartition."""

    client_config: dict[str, Any]
    include_headers: bool = False
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = 120000


@dataclass(frozen=True)
class SourceOptions:
    """A read, checked. `starting`/`ending` None mean the defaults (batch: earliest to latest;
    stream: latest, no end)."""

    subscription: Subscription
    read: ReadSettings
    starting: Bound | None = None
    ending: Bound | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000


@dataclass(frozen=True)
class SinkOptions:
    """A write, checked; `topic` (when set) wins over the rows' topic column. With
    `transactional_id_prefix` set the (streaming) write is exactly-once."""

    client_config: dict[str, Any] = field(default_factory=dict)
    topic: str | None = None
    transactional_id_prefix: str | None = None

    @property
    def exactly_once(self) -> bool:
        return self.transactional_id_prefix is not None


class _Options:
    """Case-insensitive lookup that remembers each option's documented spelling."""

    def __init__(self, raw: Mapping[str, str], known: tuple[str, ...]) -> None:
        self._values = {str(key).lower(): value for key, value in raw.items()}
        spelling = {name.lower(): name for name in known + _ENGINE_OPTIONS}
        for key in self._values:
            if key not in spelling and not key.startswith("kafka."):
                raise OptionError(key, f"unknown option; the known ones are {', '.join(known)} and kafka.*")

    def get(self, name: str) -> str | None:
        value = self._values.get(name.lower())
        return None if value is None else str(value).strip()

    def client_config(self, role: Role) -> dict[str, Any]:
        """The `kafka.*` options without the prefix, checked by the client's key table. They are
        checked together (`kafka.security.protocol=SASL_SSL` needs its `kafka.sasl.*` login), and
        a failure is put on the one option that fails alone when there is one."""
        config = {key[len("kafka."):]: value for key, value in self._values.items() if key.startswith("kafka.")}
        if not config.get("bootstrap.servers"):
            raise OptionError("kafka.bootstrap.servers", "required: the brokers to connect to, e.g. 127.0.0.1:9092")
        for key in config:
            reason = _REFUSED_CLIENT_KEYS[role].get(key)
            if reason is not None:
                raise OptionError(f"kafka.{key}", f"not supported: {reason}")
        try:
            parse_config(role, config)
        except ConfigError as together:
            for key, value in config.items():
                try:
                    parse_config(role, {"bootstrap.servers": config["bootstrap.servers"], key: value})
                except ConfigError as error:
                    if key not in _SECURITY_KEYS:
                        raise OptionError(f"kafka.{key}", str(error)) from None
            raise OptionError("kafka.*", str(together)) from None
        return config

    def boolean(self, name: str, default: bool) -> bool:
        value = self.get(name)
        if value is None:
            return default
        if value.lower() not in ("true", "false"):
            raise OptionError(name, f"expected true or false, got {value!r}")
        return value.lower() == "true"

    def positive_int(self, name: str) -> int | None:
        value = self.get(name)
        if value is None:
            return None
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number <= 0:
            raise OptionError(name, f"expected a positive whole number, got {value!r}")
        return number

    def duration_ms(self, name: str, default: int) -> int:
        """Spark's duration strings: `15m`, `30s`, `500ms`, `2h`; a bare number is milliseconds."""
        value = self.get(name)
        if value is None:
            return default
        match = _DURATION.fullmatch(value)
        if match is None:
            raise OptionError(name, f"expected a duration such as 30s, 15m or 500ms, got {value!r}")
        return int(int(match.group(1)) * _DURATION_MS[(match.group(2) or "ms").lower()])

    def offsets(self, name: str, forbidden: int | None = None) -> Bound | None:
        """`earliest`, `latest` or per-partition JSON; `forbidden` (LATEST or EARLIEST, as a word
        or in the JSON) is refused, as Spark refuses a batch starting at latest or ending at earliest."""
        value = self.get(name)
        if value is None:
            return None
        words = {"earliest": EARLIEST, "latest": LATEST}
        if value.lower() in words:
            if words[value.lower()] == forbidden:
                raise OptionError(name, f"{value.lower()} is not allowed for a batch query")
            return Earliest() if value.lower() == "earliest" else Latest()
        try:
            offsets = parse_json(value)
        except ValueError as error:
            raise OptionError(name, f"expected earliest, latest or JSON like "
                                    f'{{"topic": {{"0": 23, "1": -2}}}}: {error}') from None
        if forbidden is not None and forbidden in offsets.values():
            word = "latest" if forbidden == LATEST else "earliest"
            raise OptionError(name, f"{forbidden} ({word}) is not allowed for a batch query")
        return SpecificOffsets(name, offsets)

    def timestamp(self, name: str) -> int | None:
        value = self.get(name)
        if value is None:
            return None
        if not value.isdigit():
            raise OptionError(name, f"expected a timestamp in milliseconds since the epoch, got {value!r}")
        return int(value)

    def timestamps(self, name: str) -> dict[TopicPartition, int] | None:
        value = self.get(name)
        if value is None:
            return None
        try:
            found = parse_json(value)
        except ValueError as error:
            raise OptionError(name, f'expected JSON like {{"topic": {{"0": 1700000000000}}}}: {error}') from None
        if any(stamp < 0 for stamp in found.values()):
            raise OptionError(name, "timestamps must not be negative")
        return found


def _subscription(options: _Options) -> Subscription:
    given = [name for name in ("subscribe", "subscribePattern", "assign") if options.get(name) is not None]
    if len(given) != 1:
        raise OptionError("subscribe", f"give exactly one of subscribe, subscribePattern and assign "
                                       f"(got {', '.join(given) or 'none'})")
    name = given[0]
    value = options.get(name) or ""
    if name == "subscribe":
        topics = tuple(topic.strip() for topic in value.split(","))
        if not value or not all(topics):
            raise OptionError(name, f"expected a comma-separated list of topic names, got {value!r}")
        return Subscription(name, topics=topics)
    if name == "subscribePattern":
        try:
            re.compile(value)
        except re.error as error:
            raise OptionError(name, f"not a valid regular expression: {error}") from None
        return Subscription(name, pattern=value)
    return Subscription(name, partitions=_assigned(value))


def _assigned(value: str) -> tuple[TopicPartition, ...]:
    try:
        data = json.loads(value)
    except json.JSONDecodeError as error:
        raise OptionError("assign", f'expected JSON like {{"topic": [0, 1]}}: {error}') from None
    if not isinstance(data, dict) or not data or not all(
            isinstance(parts, list) and parts and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0
                                                      for p in parts) for parts in data.values()):
        raise OptionError("assign", f'expected JSON like {{"topic": [0, 1]}}, got {value}')
    return tuple(sorted({TopicPartition(topic, p) for topic, parts in data.items() for p in parts}))


def _starting(options: _Options, streaming: bool) -> Bound | None:
    strategy = (options.get("startingOffsetsByTimestampStrategy") or "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError("startingOffsetsByTimestampStrategy", f"expected error or latest, got {strategy!r}")
    timestamp = options.timestamp("startingTimestamp")
    if timestamp is not None:
        return ByTimestamp("startingTimestamp", timestamp=timestamp, on_missing=strategy)
    timestamps = options.timestamps("startingOffsetsByTimestamp")
    if timestamps is not None:
        return ByTimestamp("startingOffsetsByTimestamp", timestamps=timestamps, on_missing=strategy)
    return options.offsets("startingOffsets", None if streaming else LATEST)


def _ending(options: _Options, streaming: bool) -> Bound | None:
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if options.get(name) is not None:
                raise OptionError(name, "only for batch queries; a streaming query has no end")
        return None
    timestamp = options.timestamp("endingTimestamp")
    if timestamp is not None:
        return ByTimestamp("endingTimestamp", timestamp=timestamp, on_missing="latest")
    timestamps = options.timestamps("endingOffsetsByTimestamp")
    if timestamps is not None:
        return ByTimestamp("endingOffsetsByTimestamp", timestamps=timestamps, on_missing="latest")
    return options.offsets("endingOffsets", EARLIEST)


def include_headers(raw: Mapping[str, str]) -> bool:
    """Only `includeHeaders`, for the schema (Spark asks for it before any reader exists)."""
    return _Options(raw, _SOURCE_OPTIONS).boolean("includeHeaders", False)


def parse_source_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Check every source option; the first problem raises an OptionError naming the option."""
    options = _Options(raw, _SOURCE_OPTIONS)
    client_config = options.client_config(Role.CONSUMER)
    subscription = _subscription(options)
    read = ReadSettings(client_config, options.boolean("includeHeaders", False),
                        options.boolean("failOnDataLoss", True),
                        options.positive_int("kafkaConsumer.pollTimeoutMs") or 120000)
    return SourceOptions(subscription, read, _starting(options, streaming), _ending(options, streaming),
                         options.positive_int("maxOffsetsPerTrigger"), options.positive_int("minOffsetsPerTrigger"),
                         options.duration_ms("maxTriggerDelay", 15 * 60 * 1000))


def parse_sink_options(raw: Mapping[str, str], *, streaming: bool = True) -> SinkOptions:
    """Check the sink options (`kafka.*` go to the Producer)."""
    options = _Options(raw, _SINK_OPTIONS)
    topic = options.get("topic")
    if topic == "":
        raise OptionError("topic", "must not be empty")
    config = options.client_config(Role.PRODUCER)
    guarantee = (options.get("deliveryGuarantee") or AT_LEAST_ONCE).lower()
    prefix = options.get("transactionalIdPrefix")
    if guarantee not in (AT_LEAST_ONCE, EXACTLY_ONCE):
        raise OptionError("deliveryGuarantee", f"expected {AT_LEAST_ONCE} or {EXACTLY_ONCE}, got {guarantee!r}")
    if guarantee == AT_LEAST_ONCE:
        if prefix is not None:
            raise OptionError("transactionalIdPrefix", f"only used with deliveryGuarantee={EXACTLY_ONCE}")
        return SinkOptions(config, topic)
    if not streaming:
        raise OptionError("deliveryGuarantee", f"{EXACTLY_ONCE} applies to streaming writes (writeStream); "
                                               f"a batch write has no micro-batch to commit atomically")
    if not prefix:
        raise OptionError("transactionalIdPrefix", f"required with deliveryGuarantee={EXACTLY_ONCE}: each task "
                                                   f"uses the transactional id <prefix>-<partition id>; choose one "
                                                   f"per query, stable across its restarts")
    if topic is None:
        raise OptionError("topic", f"required with deliveryGuarantee={EXACTLY_ONCE}: the batch markers are "
                                   f"committed against it (the rows' topic column is not supported in that mode)")
    config.setdefault("transaction.timeout.ms", EXACTLY_ONCE_TRANSACTION_TIMEOUT_MS)
    try:
        parse_config(Role.PRODUCER, {**config, "transactional.id": f"{prefix}-0"})
    except ConfigError as error:
        raise OptionError("kafka.*", f"with deliveryGuarantee={EXACTLY_ONCE}: {error}") from None
    return SinkOptions(config, topic, prefix)
