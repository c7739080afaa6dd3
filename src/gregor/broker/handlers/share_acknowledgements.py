"""What ShareFetch and ShareAcknowledge have in common: topic ids resolved, acknowledgement
batches applied partition by partition, the answer's per-partition error."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from gregor.broker.handlers import BrokerContext
from gregor.coordinator.share.share_partition import Acknowledgement
from gregor.protocol.error_codes import ErrorCode


@dataclass
class NamedPartition:
    """A partition a request names (a topic id may come more than once: merged here)."""

    topic_id: uuid.UUID
    index: int
    topic: str | None
    acknowledgements: list[Acknowledgement] = field(default_factory=list)


def named_partitions(context: BrokerContext, topics: Iterable[Any]) -> list[NamedPartition]:
    """Each (topic id, partition) of `topics` once, with its acknowledgement batches."""
    found: dict[tuple[uuid.UUID, int], NamedPartition] = {}
    for topic in topics:
        name = context.metadata.topic_name(topic.topic_id)
        for partition in topic.partitions:
            key = (topic.topic_id, partition.partition_index)
            named = found.setdefault(key, NamedPartition(topic.topic_id, partition.partition_index, name))
            named.acknowledgements.extend(
                Acknowledgement(batch.first_offset, batch.last_offset, tuple(batch.acknowledge_types))
                for batch in partition.acknowledgement_batches)
    return list(found.values())


def acknowledge(context: BrokerContext, group_id: str, member_id: str, named: NamedPartition) -> ErrorCode:
    """Apply one partition's acknowledgements (all or none) on this broker."""
    if named.topic is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    error, partition = context.shares.leader(named.topic, named.index)
    if partition is None:
        return error
    return context.shares.acknowledge(group_id, member_id, named.topic, partition, named.acknowledgements)
