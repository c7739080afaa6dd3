"""Offset reset plans for a consumer group, with the scenarios and rules of
`gregor consumer-groups --reset-offsets` (Kafka's): every new offset is kept within the partition's
[earliest, latest], and a time with no record at or after it means the log end."""

from __future__ import annotations

from typing import Mapping

from gregor.client import TopicPartition

SCENARIOS = {
    "to-earliest": "to the earliest offset",
    "to-latest": "to the log end (skip everything not yet read)",
    "to-offset": "to the given offset",
    "shift-by": "by the given number (negative: back)",
    "to-datetime": "to the first record at or after the given time",
}
NEEDS_VALUE = ("to-offset", "shift-by", "to-datetime")


def plan_reset(scenario: str, partitions: list[TopicPartition], committed: Mapping[TopicPartition, int],
               earliest: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               value: int | None = None, by_time: Mapping[TopicPartition, int] | None = None,
               ) -> dict[TopicPartition, int]:
    """The new committed offset of each partition. `value` is the offset (to-offset) or the shift
    (shift-by); `by_time` the offsets ListOffsets found for the time (to-datetime)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown reset scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    if scenario in ("to-offset", "shift-by") and value is None:
        raise ValueError(f"{scenario} needs a number")
    targets: dict[TopicPartition, int] = {}
    for tp in partitions:
        end = latest.get(tp, 0)
        if scenario == "to-earliest":
            target = earliest.get(tp, 0)
        elif scenario == "to-latest":
            target = end
        elif scenario == "to-offset":
            target = value  # type: ignore[assignment]
        elif scenario == "shift-by":
            target = committed.get(tp, end) + value  # type: ignore[operator]
        else:
            target = (by_time or {}).get(tp, end)
        targets[tp] = min(max(target, earliest.get(tp, 0)), latest.get(tp, target))
    return targets
