"""What ShareFetch and ShareAcknowledge have in common: topic ids resolved, share-partitions
loaded from their persisted state, acknowledgement batches applied partition by partition,
answers sent once the state they changed is persisted."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, TypeVar

from gregor.broker.handlers import BrokerContext
from gregor.coordinator.share.share_partition import Acknowledgement
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError

R = TypeVar("R")


@dataclass
class NamedPartition:
    """A partition a request names (a topic id may come more than once: merged here)."""

    topic_id: uuid.UUID
    index: int
    topic: str | None
    acknowledgements: list[Acknowledgement] = field(default_factory=list)
    refused: bool = False  # the principal may not READ the topic

    @property
    def error(self) -> ErrorCode:
        """Why the partition cannot be served at all, NONE when it can."""
        if self.topic is None:
            return ErrorCode.UNKNOWN_TOPIC_ID
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED if self.refused else ErrorCode.NONE


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
    readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC,
                                     {n.topic for n in found.values() if n.topic is not None})
    for named in found.values():
        named.refused = named.topic is not None and named.topic not in readable
    return list(found.values())


def group_refused(context: BrokerContext, group_id: str) -> bool:
    """ShareFetch and ShareAcknowledge need READ on the group (GROUP_AUTHORIZATION_FAILED)."""
    return not context.allowed(AclOperation.READ, ResourceType.GROUP, group_id)


def to_load(context: BrokerContext, group_id: str, partitions: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The partitions this broker leads whose share-partition for the group is not in memory."""
    missing = []
    for topic, index in partitions:
        _, partition = context.shares.leader(topic, index)
        if partition is not None and context.shares.loaded(group_id, topic, partition) is None:
            missing.append((topic, index))
    return missing


async def load(context: BrokerContext, group_id: str,
               partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """Load the share-partitions; the error of each that could not be (its state unreadable)."""
    errors = {}
    for topic, index in partitions:
        _, partition = context.shares.leader(topic, index)
        if partition is None:
            continue
        try:
            await context.shares.load(group_id, topic, partition)
        except KafkaError as error:
            errors[(topic, index)] = ErrorCode(error.code)
    return errors


def acknowledge(context: BrokerContext, group_id: str, member_id: str, named: NamedPartition) -> ErrorCode:
    """Apply one partition's acknowledgements (all or none) on this broker."""
    if named.topic is None or named.refused:
        return named.error
    error, partition = context.shares.leader(named.topic, named.index)
    if partition is None:
        return error
    return context.shares.acknowledge(group_id, member_id, named.topic, partition, named.acknowledgements)


def after_persisting(context: BrokerContext, answer: Callable[[], R]) -> R | Awaitable[R]:
    """The answer once the share state changed so far is persisted (at once when nothing changed)."""
    pending = context.shares.settle()
    if pending is None:
        return answer()

    async def later() -> R:
        await asyncio.shield(pending)
        return answer()

    return later()
