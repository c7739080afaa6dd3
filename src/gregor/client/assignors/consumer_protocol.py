"""Kafka's ConsumerProtocol: the subscription a member sends in JoinGroup and the assignment the
leader sends back through SyncGroup.

Byte-compatible with Java's ConsumerProtocol: a big-endian int16 version, then the
ConsumerProtocolSubscription or ConsumerProtocolAssignment struct of that version. Decoding is
tolerant in the same ways as Java's: a version above the highest known one is read with the
highest known schema (the schemas promise that newer versions only append fields), and bytes
after the struct are ignored. Anything else unreadable raises ConsumerProtocolError.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gregor.protocol.exceptions import DecodeError, EncodeError
from gregor.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from gregor.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from gregor.protocol.primitives import Reader, Writer
from gregor.client.assignors.topic_partition import (
    TopicPartition, java_partition_key, java_string_key,
)

HIGHEST_VERSION = 3


class ConsumerProtocolError(DecodeError):
    """Bytes that are not a consumer-protocol subscription or assignment."""


@dataclass(frozen=True)
class Subscription:
    """What a member asks for in JoinGroup, as Java's ConsumerPartitionAssignor.Subscription.

    `generation_id` is None when absent (versions 0-1) or negative, and `rack_id` is None when
    absent or empty, as Java reads them. `group_instance_id` is not part of the bytes: the
    leader copies it from the JoinGroup response so that assignors can order static members.
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int | None = None
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    """What the leader gives a member in SyncGroup: its partitions and the assignor's user data."""

    partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes | None = None


def encode_subscription(subscription: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """The JoinGroup protocol metadata for `subscription`; topics and owned partitions sorted as Java does.

    Fields the version lacks are left out silently, as Java does for these ignorable fields.
    """
    owned = ConsumerProtocolSubscription.TopicPartition
    message = ConsumerProtocolSubscription(
        topics=sorted(subscription.topics, key=java_string_key),
        user_data=subscription.user_data,
        owned_partitions=[owned(topic=topic, partitions=partitions)
                          for topic, partitions in _grouped_by_topic(
                              sorted(subscription.owned_partitions, key=java_partition_key))],
        generation_id=-1 if subscription.generation_id is None else subscription.generation_id,
        rack_id=subscription.rack_id,
    )
    return _version_prefixed(message, version)


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """Read JoinGroup protocol metadata of any version, tolerating newer versions as Java does."""
    reader, version = _versioned_reader(data, "subscription")
    try:
        message = ConsumerProtocolSubscription.decode(reader, version)
    except DecodeError as error:
        raise ConsumerProtocolError(f"malformed consumer subscription v{version}: {error}") from None
    return Subscription(
        topics=tuple(message.topics),
        user_data=message.user_data,
        owned_partitions=tuple(TopicPartition(entry.topic, partition)
                               for entry in message.owned_partitions
                               for partition in entry.partitions),
        generation_id=message.generation_id if message.generation_id >= 0 else None,
        rack_id=message.rack_id or None,
    )


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """The SyncGroup bytes for `assignment`; partitions grouped by topic in first-seen order, as Java."""
    entry = ConsumerProtocolAssignment.TopicPartition
    message = ConsumerProtocolAssignment(
        assigned_partitions=[entry(topic=topic, partitions=partitions)
                             for topic, partitions in _grouped_by_topic(assignment.partitions)],
        user_data=assignment.user_data,
    )
    return _version_prefixed(message, version)


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """Read SyncGroup assignment bytes of any version, tolerating newer versions as Java does."""
    reader, version = _versioned_reader(data, "assignment")
    try:
        message = ConsumerProtocolAssignment.decode(reader, version)
    except DecodeError as error:
        raise ConsumerProtocolError(f"malformed consumer assignment v{version}: {error}") from None
    return Assignment(
        partitions=tuple(TopicPartition(entry.topic, partition)
                         for entry in message.assigned_partitions
                         for partition in entry.partitions),
        user_data=message.user_data,
    )


def _grouped_by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return list(grouped.items())


def _version_prefixed(message: ConsumerProtocolSubscription | ConsumerProtocolAssignment,
                      version: int) -> bytes:
    if not 0 <= version <= HIGHEST_VERSION:
        raise EncodeError(f"consumer protocol has versions 0-{HIGHEST_VERSION}, not {version}")
    writer = Writer()
    writer.int16(version)
    message.encode_into(writer, version)
    return writer.getvalue()


def _versioned_reader(data: bytes | bytearray | memoryview, what: str) -> tuple[Reader, int]:
    reader = Reader(data)
    try:
        version = reader.int16()
    except DecodeError:
        raise ConsumerProtocolError(f"consumer {what} too short for its version header") from None
    if version < 0:
        raise ConsumerProtocolError(f"unsupported consumer {what} version {version}")
    return reader, min(version, HIGHEST_VERSION)
