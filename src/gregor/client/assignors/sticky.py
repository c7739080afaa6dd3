"""Kafka's StickyAssignor ("sticky"): balanced and sticky, for the eager protocol.

An eager member revokes everything before it joins, so its Subscription's owned partitions are
empty; it reports what it owned in the user data instead, in Java's StickyAssignor format:
`[topic: string, partitions: [int32]]` then (version 1) `generation: int32`, with no version
prefix. A member whose user data is absent or empty falls back to the Subscription's owned
partitions and generation (the fields of versions 1-3), which is what a client that does not
fill the user data can send.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.primitives import Reader, Writer
from gregor.client.assignors.abstract_sticky import AbstractStickyAssignor
from gregor.client.assignors.consumer_protocol import Assignment, Subscription
from gregor.client.assignors.previous_ownership import DEFAULT_GENERATION, MemberData
from gregor.client.assignors.topic_partition import TopicPartition, java_partition_key


class StickyAssignor(AbstractStickyAssignor):
    """The eager sticky assignor; remembers its last assignment to report it at the next join."""

    name = "sticky"

    def __init__(self) -> None:
        self._partitions: tuple[TopicPartition, ...] | None = None
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Keep the assignment and generation for the next join's user data."""
        self._partitions = assignment.partitions
        self._generation = generation_id

    def subscription_user_data(self, topics: Collection[str]) -> bytes | None:
        """The last assignment and its generation; None before the first assignment, as in Java."""
        if self._partitions is None:
            return None
        return encode_sticky_user_data(self._partitions, self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        """The previous assignment from the user data, else from the Subscription's owned fields."""
        if subscription.user_data:
            return decode_sticky_user_data(subscription.user_data)
        return MemberData(subscription.owned_partitions,
                          DEFAULT_GENERATION if subscription.generation_id is None else subscription.generation_id)


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """StickyAssignor user data version 1: the partitions grouped by topic, then the generation."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions, key=java_partition_key):
        grouped.setdefault(topic, []).append(partition)
    writer = Writer()
    writer.int32(len(grouped))
    for topic, numbers in grouped.items():
        writer.string(topic)
        writer.int32(len(numbers))
        for number in numbers:
            writer.int32(number)
    writer.int32(generation)
    return writer.getvalue()


def decode_sticky_user_data(data: bytes) -> MemberData:
    """Read version 1, else version 0 (no generation), else nothing, as Java's StickyAssignor does.

    Unreadable user data only costs stickiness, so it yields an empty claim rather than an error.
    """
    reader = Reader(data)
    try:
        entries = reader.array(_read_topic_partitions, 6)
    except DecodeError:
        return MemberData()
    try:
        generation = reader.int32()
    except DecodeError:
        generation = DEFAULT_GENERATION
    return MemberData(tuple(TopicPartition(topic, partition) for topic, numbers in entries for partition in numbers),
                      generation)


def _read_topic_partitions(reader: Reader) -> tuple[str, list[int]]:
    return reader.string(), reader.array(Reader.int32, 4)
