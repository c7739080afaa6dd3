"""The bounds of consumer-protocol session timeouts and heartbeat intervals (KIP-848).

Kafka's broker keys `group.consumer.{min,max}.session.timeout.ms` and
`group.consumer.{min,max}.heartbeat.interval.ms` bound both the broker-wide defaults and the
per-group overrides (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`). A broker
whose keys contradict each other does not start; the checks and their wording are Kafka's.
"""

from __future__ import annotations

from typing import Mapping

from gregor.metadata.group_configs import BROKER_GROUP_DEFAULTS

CONSUMER_LIMIT_DEFAULTS: dict[str, int] = {**BROKER_GROUP_DEFAULTS, "group.consumer.max.size": 2147483647}
"""Kafka 4's defaults of the keys checked here."""


def consumer_limit_error(values: Mapping[str, int]) -> str | None:
    """The first contradiction among the keys of CONSUMER_LIMIT_DEFAULTS (every one must be in
    `values`), as one line, or None when they can be used together."""
    for name in CONSUMER_LIMIT_DEFAULTS:
        if values[name] < 1:
            return f"{name}: must be at least 1, got {values[name]}"
    for kind in ("heartbeat.interval", "session.timeout"):
        value, low, high = (f"group.consumer.{prefix}{kind}.ms" for prefix in ("", "min.", "max."))
        if values[high] < values[low]:
            return f"{high} must be greater than or equal to {low}"
        if values[value] < values[low]:
            return f"{value} must be greater than or equal to {low}"
        if values[value] > values[high]:
            return f"{value} must be less than or equal to {high}"
    if values["group.consumer.heartbeat.interval.ms"] >= values["group.consumer.session.timeout.ms"]:
        return "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"
    return None
