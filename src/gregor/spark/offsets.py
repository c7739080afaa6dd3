"""Per-partition offsets in the JSON shape of Spark's Kafka source: {"topic": {"partition": offset}}.

The same shape is used for the `startingOffsets` / `endingOffsets` options and for the offsets a
streaming query writes to its checkpoint. Spark's Python streaming engine decides whether a
micro-batch has new data by comparing the JSON text of two offsets, so the same offsets must always
serialize to the same text: `to_json_dict` orders topics by name and partitions by number.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from gregor.client import TopicPartition

EARLIEST = -2
"""In an offsets JSON: start at the partition's log start offset."""
LATEST = -1
"""In an offsets JSON: the partition's end offset (high watermark, or LSO with read_committed)."""

PartitionOffsets = dict[TopicPartition, int]


def to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The canonical, ordered dict for `offsets` (what Spark stores and compares as JSON text)."""
    result: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        result.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return result


def from_json_dict(data: Any) -> PartitionOffsets:
    """Offsets from the parsed JSON; ValueError naming what is wrong when the shape is not Spark's."""
    if not isinstance(data, dict):
        raise ValueError(f'expected an object like {{"topic": {{"0": 42}}}}, got {json.dumps(data)}')
    offsets: PartitionOffsets = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, dict):
            raise ValueError(f"topic {topic!r}: expected an object of partition -> offset, got {json.dumps(partitions)}")
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                raise ValueError(f"topic {topic!r}: partition {partition!r} is not a number") from None
            if number < 0:
                raise ValueError(f"topic {topic!r}: partition {number} is negative")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise ValueError(f"{topic}-{number}: offset {json.dumps(offset)} is not an offset, "
                                 f"-1 (latest) or -2 (earliest)")
            offsets[TopicPartition(topic, number)] = offset
    return offsets


def parse_json(text: str) -> PartitionOffsets:
    """Offsets from JSON text (an option value); ValueError when it is not valid JSON of Spark's shape."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    return from_json_dict(data)


def describe(offsets: Mapping[TopicPartition, int]) -> str:
    """Compact text for error messages: `topic-0:12, topic-1:7`."""
    return ", ".join(f"{tp.topic}-{tp.partition}:{offsets[tp]}" for tp in sorted(offsets))
