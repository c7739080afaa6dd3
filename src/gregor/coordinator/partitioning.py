"""Which `__consumer_offsets` partition holds a group: Kafka's `abs(groupId.hashCode) % n`.

The hash must be Java's String.hashCode (over UTF-16 code units, wrapping at 32 bits) and the
absolute value Kafka's Utils.abs (Integer.MIN_VALUE maps to 0), or Gregor and Kafka would
disagree about where a group lives in the same topic.
"""

from __future__ import annotations

import struct

_INT_MIN = -(1 << 31)


def java_string_hashcode(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as an int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    value = 0
    for unit in struct.unpack(f">{len(data) // 2}H", data):
        value = (31 * value + unit) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def kafka_abs(value: int) -> int:
    """Kafka's Utils.abs: the absolute value of an int32, with Integer.MIN_VALUE mapped to 0."""
    return 0 if value == _INT_MIN else abs(value)


def partition_for(group_id: str, num_partitions: int) -> int:
    """The `__consumer_offsets` partition of `group_id` (Kafka's GroupMetadataManager.partitionFor)."""
    return kafka_abs(java_string_hashcode(group_id)) % num_partitions
