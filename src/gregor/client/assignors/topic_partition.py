"""A topic partition, and the order Java's client sorts strings and partitions in.

Assignors must walk members and topics in the same order as Kafka's Java client, or a Gregor
leader would hand out different partitions than a Java leader for the same group. Java compares
strings by UTF-16 code unit, which differs from Python's code-point order outside the BMP.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """One partition of one topic, as consumers and assignors name it."""

    topic: str
    partition: int


def java_string_key(text: str) -> bytes:
    """Sort key giving Java's String.compareTo order (UTF-16 code units, shorter prefix first)."""
    return text.encode("utf-16-be", "surrogatepass")


def java_partition_key(topic_partition: TopicPartition) -> tuple[bytes, int]:
    """Sort key for Java's TopicPartition order: by topic, then partition number."""
    return java_string_key(topic_partition.topic), topic_partition.partition
