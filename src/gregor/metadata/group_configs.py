"""Per-group configs (KIP-848's GroupConfig): the GROUP config resource's keys and their checks.

A group's overrides are ConfigRecords of resource type GROUP in the metadata log, like topic
configs; a key without an override takes the broker's value of its synonym. The values must lie
within the broker's `group.consumer.min/max.*` bounds, as Kafka's GroupConfig checks them.
Gregor takes the consumer-protocol keys; the share-group keys of Kafka's GroupConfig are refused
as unknown (share groups here take the broker's `group.share.*` keys).
"""

from __future__ import annotations

from typing import Mapping

GROUP_RESOURCE = 32
"""Kafka's ConfigResource.Type.GROUP."""

BROKER_GROUP_DEFAULTS: dict[str, int] = {
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.min.session.timeout.ms": 45000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.min.heartbeat.interval.ms": 5000,
    "group.consumer.max.heartbeat.interval.ms": 15000,
}
"""The broker keys group configs default to and are bounded by, with Kafka 4's defaults."""

GROUP_CONFIG_SYNONYMS: dict[str, str] = {
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
}
"""Each group config and the broker key whose value it defaults to."""

GROUP_CONFIG_DOCS: dict[str, str] = {
    "consumer.session.timeout.ms": "The timeout to detect client failures when using the consumer group protocol.",
    "consumer.heartbeat.interval.ms": "The heartbeat interval given to the members of a consumer group.",
}

_BOUNDS = {"consumer.session.timeout.ms": "group.consumer.{}.session.timeout.ms",
           "consumer.heartbeat.interval.ms": "group.consumer.{}.heartbeat.interval.ms"}


def effective_group_config(overrides: Mapping[str, str], broker: Mapping[str, int]) -> dict[str, int]:
    """Every group config's value for a group: its override, else the broker's synonym."""
    return {name: int(overrides[name]) if name in overrides else broker[synonym]
            for name, synonym in GROUP_CONFIG_SYNONYMS.items()}


def validate_group_configs(overrides: Mapping[str, str], broker: Mapping[str, int]) -> str | None:
    """Why a group's whole set of overrides cannot be used (Kafka's wording), or None.

    `broker` holds the broker keys named by GROUP_CONFIG_SYNONYMS and their min/max bounds."""
    for name, value in overrides.items():
        if name not in GROUP_CONFIG_SYNONYMS:
            return f"Unknown group config name: {name}"
        try:
            int(value.strip())
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type INT"
    values = effective_group_config({k: v.strip() for k, v in overrides.items()}, broker)
    for name, pattern in _BOUNDS.items():
        if values[name] < broker[pattern.format("min")]:
            return f"{name} must be greater than or equal to {pattern.format('min')}"
        if values[name] > broker[pattern.format("max")]:
            return f"{name} must be less than or equal to {pattern.format('max')}"
    if values["consumer.session.timeout.ms"] <= values["consumer.heartbeat.interval.ms"]:
        return "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    return None
