"""The group coordinator's broker settings, with Kafka's keys and defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    """Field names follow the broker keys (`group.max.size` -> `group_max_size`)."""

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2147483647
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    offsets_topic_num_partitions: int = 50
    group_consumer_session_timeout_ms: int = 45000
    group_consumer_min_session_timeout_ms: int = 45000
    group_consumer_max_session_timeout_ms: int = 60000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15000
    group_consumer_max_size: int = 2147483647
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60 * 1000

    @staticmethod
    def from_properties(properties: Mapping[str, str]) -> GroupCoordinatorConfig:
        """Read the keys above from server.properties-style strings; other keys are ignored.

        Raises ValueError for a value that is not an integer (or, for `group.consumer.assignors`,
        names no assignor this broker has).
        """
        values: dict[str, object] = {}
        for field in fields(GroupCoordinatorConfig):
            key = field.name.replace("_", ".")
            if key == "group.consumer.assignors":
                if key in properties:
                    values[field.name] = consumer_assignors(properties[key])
            elif key in properties:
                try:
                    values[field.name] = int(properties[key].strip())
                except ValueError:
                    raise ValueError(f"{key} must be an integer, not {properties[key]!r}") from None
        return GroupCoordinatorConfig(**values)  # type: ignore[arg-type]


ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
"""Kafka's class names of its built-in assignors, accepted in `group.consumer.assignors`."""


def consumer_assignors(value: str) -> tuple[str, ...]:
    """`group.consumer.assignors`: names (or Kafka's class names) of built-in assignors, the first
    the default. Raises ValueError for an empty list or an assignor this broker does not have."""
    names = tuple(ASSIGNOR_CLASSES.get(item.strip(), item.strip()) for item in value.split(",") if item.strip())
    unknown = [name for name in names if name not in ("uniform", "range")]
    if not names or unknown:
        raise ValueError(f"group.consumer.assignors must list uniform and/or range, not {value!r}")
    return names
