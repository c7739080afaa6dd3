"""Per-group configs (KIP-848's GroupConfig): the GROUP config resource's keys and their checks.

A group's overrides are ConfigRecords of resource type GROUP in the metadata log, like topic
configs; a key without an override takes the broker's value of its synonym. The consumer keys
must lie within the broker's `group.consumer.min/max.*` bounds, as Kafka's GroupConfig checks
them. Gregor has no `group.share.min/max.*` keys: the share keys are held to the ranges Gregor
allows for their broker synonyms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union

GROUP_RESOURCE = 32
"""Kafka's ConfigResource.Type.GROUP."""

BrokerValue = Union[int, str]

BROKER_GROUP_DEFAULTS: dict[str, int] = {
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.min.session.timeout.ms": 45000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.min.heartbeat.interval.ms": 5000,
    "group.consumer.max.heartbeat.interval.ms": 15000,
}
"""The consumer-protocol broker keys group configs default to and are bounded by (Kafka 4's defaults)."""

SHARE_BROKER_DEFAULTS: dict[str, BrokerValue] = {
    "group.share.session.timeout.ms": 45000,
    "group.share.heartbeat.interval.ms": 5000,
    "group.share.record.lock.duration.ms": 30000,
    "share.auto.offset.reset": "latest",
}
"""The share-group broker keys group configs default to (Kafka's defaults)."""


@dataclass(frozen=True)
class GroupConfigKey:
    synonym: str | None
    """The broker key whose value the group takes without an override (None: `default`)."""
    type: str  # int or string
    doc: str
    default: str = ""
    choices: tuple[str, ...] = ()  # a string key's allowed values

    def default_value(self, broker: Mapping[str, BrokerValue]) -> BrokerValue:
        """The value without an override: the broker's synonym's, else the key's own default."""
        return broker[self.synonym] if self.synonym is not None else self.default


GROUP_CONFIGS: dict[str, GroupConfigKey] = {
    "consumer.session.timeout.ms": GroupConfigKey(
        "group.consumer.session.timeout.ms", "int",
        "The timeout to detect client failures when using the consumer group protocol."),
    "consumer.heartbeat.interval.ms": GroupConfigKey(
        "group.consumer.heartbeat.interval.ms", "int", "The heartbeat interval given to the members of a consumer group."),
    "share.session.timeout.ms": GroupConfigKey(
        "group.share.session.timeout.ms", "int", "The timeout to detect client failures when using the share group protocol."),
    "share.heartbeat.interval.ms": GroupConfigKey(
        "group.share.heartbeat.interval.ms", "int", "The heartbeat interval given to the members of a share group."),
    "share.record.lock.duration.ms": GroupConfigKey(
        "group.share.record.lock.duration.ms", "int", "The record acquisition lock duration of a share group."),
    "share.auto.offset.reset": GroupConfigKey(
        "share.auto.offset.reset", "string",
        "Where a share group starts on a partition it has no state for: latest or earliest.",
        choices=("latest", "earliest")),
    "share.isolation.level": GroupConfigKey(
        None, "string",
        "Whether a share group delivers records of transactions still open or aborted (read_uncommitted) "
        "or only committed ones (read_committed).",
        default="read_uncommitted", choices=("read_committed", "read_uncommitted")),
}

_CONSUMER_BOUNDS = {"consumer.session.timeout.ms": "group.consumer.{}.session.timeout.ms",
                    "consumer.heartbeat.interval.ms": "group.consumer.{}.heartbeat.interval.ms"}
SHARE_BOUNDS: dict[str, tuple[int, int | None]] = {
    "share.session.timeout.ms": (1000, None), "share.heartbeat.interval.ms": (100, None),
    "share.record.lock.duration.ms": (1000, 3600000)}
"""The ranges Gregor allows for the share keys (those of their broker synonyms)."""


def group_int(overrides: Mapping[str, str], name: str, default: int) -> int:
    """An integer group config: the group's override, else `default` (the broker's synonym)."""
    return int(overrides[name]) if name in overrides else default


def validate_group_configs(overrides: Mapping[str, str], broker: Mapping[str, BrokerValue]) -> str | None:
    """Why a group's whole set of overrides cannot be used (Kafka's wording), or None.

    `broker` holds BROKER_GROUP_DEFAULTS' and SHARE_BROKER_DEFAULTS' keys with this broker's values."""
    values: dict[str, BrokerValue] = {name: key.default_value(broker) for name, key in GROUP_CONFIGS.items()}
    for name, value in overrides.items():
        key = GROUP_CONFIGS.get(name)
        if key is None:
            return f"Unknown group config name: {name}"
        if key.type == "int":
            try:
                values[name] = int(value.strip())
            except ValueError:
                return f"Invalid value {value} for configuration {name}: Not a number of type INT"
        elif value.strip() not in key.choices:
            return f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(key.choices)}"
        else:
            values[name] = value.strip()
    for name, pattern in _CONSUMER_BOUNDS.items():
        if int(values[name]) < int(broker[pattern.format("min")]):
            return f"{name} must be greater than or equal to {pattern.format('min')}"
        if int(values[name]) > int(broker[pattern.format("max")]):
            return f"{name} must be less than or equal to {pattern.format('max')}"
    for name, (low, high) in SHARE_BOUNDS.items():
        if high is not None and not low <= int(values[name]) <= high:
            return f"{name} must be between {low} and {high}"
        if int(values[name]) < low:
            return f"{name} must be at least {low}"
    for kind in ("consumer", "share"):
        if int(values[f"{kind}.session.timeout.ms"]) <= int(values[f"{kind}.heartbeat.interval.ms"]):
            return f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms"
    return None
