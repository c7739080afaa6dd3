"""What the group tools (`gregor consumer-groups`, `gregor share-groups`) share: the partitions
a `--topic` names, offsets by ListOffsets, Kafka's `--to-datetime` and the dash for an unknown
value."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from gregor.cli.common import ToolError, UsageError
from gregor.client import AdminClient, KafkaException, TopicPartition
from gregor.client.admin import ListedOffset, OffsetSpec

_DATETIME_FORMATS = ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M")


def or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def listed_offsets(admin: AdminClient, partitions: list[TopicPartition], spec: OffsetSpec) -> dict[TopicPartition, int]:
    """Offsets by ListOffsets; a partition whose lookup failed (e.g. topic deleted) is left out."""
    if not partitions:
        return {}
    listed = admin.list_offsets({tp: spec for tp in partitions})
    return {TopicPartition(*tp): result.offset for tp, result in listed.items()
            if isinstance(result, ListedOffset) and result.offset >= 0}


def requested_partitions(admin: AdminClient, topics: list[str]) -> list[TopicPartition]:
    """`--topic t` (every partition of t) or `--topic t:0,2`, checked against the cluster."""
    wanted: dict[str, list[int] | None] = {}
    for item in topics:
        name, _, listed = item.partition(":")
        try:
            wanted[name] = [int(part) for part in listed.split(",")] if listed else None
        except ValueError:
            raise UsageError(f"--topic {item!r}: expected TOPIC or TOPIC:PARTITION,PARTITION") from None
    descriptions = admin.describe_topics(list(wanted))
    result: list[TopicPartition] = []
    for name, parts in wanted.items():
        description = descriptions[name]
        if isinstance(description, KafkaException):
            raise ToolError(f"topic '{name}': {description} (see 'gregor topics --list')")
        existing = {p.partition for p in description.partitions}
        chosen = sorted(existing) if parts is None else parts
        missing = [p for p in chosen if p not in existing]
        if missing:
            raise ToolError(f"topic '{name}' has no partition {missing[0]}")
        result.extend(TopicPartition(name, p) for p in chosen)
    return result


def parse_datetime(text: str) -> datetime:
    """Kafka's --to-datetime: YYYY-MM-DDTHH:mm:SS.sss with an optional Z or ±hh:mm; local time without."""
    zone_match = re.search(r"(Z|[+-]\d{2}:?\d{2})$", text.strip())
    zone = zone_match.group(1) if zone_match else None
    body = text.strip()[:zone_match.start()] if zone_match else text.strip()
    for pattern in _DATETIME_FORMATS:
        try:
            parsed = datetime.strptime(body, pattern)
            break
        except ValueError:
            continue
    else:
        raise UsageError(f"--to-datetime {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss, optionally with Z or +hh:mm")
    if zone is None:
        return parsed.astimezone()
    if zone == "Z":
        return parsed.replace(tzinfo=timezone.utc)
    sign = 1 if zone[0] == "+" else -1
    digits = zone[1:].replace(":", "")
    offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return parsed.replace(tzinfo=timezone(sign * offset))
