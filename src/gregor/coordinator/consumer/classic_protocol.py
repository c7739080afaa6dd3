"""The classic consumer protocol's embedded formats, as a consumer group reads and writes them
for its classic members (KIP-848 online migration): the subscription a JoinGroup carries and the
assignment a SyncGroup returns, with topics by name where the consumer group keeps topic ids."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Mapping

from gregor.coordinator.consumer.assignment import Assignment, normalized
from gregor.coordinator.consumer.group import TopicInfo
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from gregor.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from gregor.protocol.primitives import Reader

MAX_SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 0


@dataclass(frozen=True)
class ClassicSubscription:
    topics: tuple[str, ...]
    owned: Assignment
    rack_id: str | None


def read_subscription(metadata: bytes, topics: Mapping[str, TopicInfo]) -> ClassicSubscription | None:
    """A ConsumerProtocolSubscription (any version; newer ones read as the newest known, as Kafka
    does); owned partitions of topics the cluster does not have are dropped. None if unreadable."""
    reader = Reader(metadata)
    try:
        version = reader.int16()
        if version < 0:
            return None
        subscription = ConsumerProtocolSubscription.decode(reader, min(version, MAX_SUBSCRIPTION_VERSION))
    except DecodeError:
        return None
    owned: dict[uuid.UUID, list[int]] = {}
    for owned_topic in subscription.owned_partitions or ():
        info = topics.get(owned_topic.topic)
        if info is not None:
            owned.setdefault(info.topic_id, []).extend(owned_topic.partitions)
    return ClassicSubscription(tuple(sorted(set(subscription.topics))), normalized(owned), subscription.rack_id)


def read_assignment(data: bytes, topics: Mapping[str, TopicInfo]) -> Assignment | None:
    """The partitions of a ConsumerProtocolAssignment, by topic id; None if unreadable."""
    if not data:
        return {}
    reader = Reader(data)
    try:
        version = reader.int16()
        if version < 0:
            return None
        assignment = ConsumerProtocolAssignment.decode(reader, min(version, MAX_SUBSCRIPTION_VERSION))
    except DecodeError:
        return None
    by_id: dict[uuid.UUID, list[int]] = {}
    for assigned in assignment.assigned_partitions:
        info = topics.get(assigned.topic)
        if info is not None:
            by_id.setdefault(info.topic_id, []).extend(assigned.partitions)
    return normalized(by_id)


def write_assignment(assignment: Assignment, names: Mapping[uuid.UUID, str]) -> bytes:
    """A version 0 ConsumerProtocolAssignment, which every classic consumer reads."""
    value = ConsumerProtocolAssignment(assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic=names[topic_id], partitions=sorted(partitions))
        for topic_id, partitions in sorted(assignment.items()) if topic_id in names])
    return ASSIGNMENT_VERSION.to_bytes(2, "big") + value.encode(ASSIGNMENT_VERSION)
