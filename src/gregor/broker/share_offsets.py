"""Share group offsets as the group's coordinator reads and changes them (KIP-932's admin side).

A share group's "offset" on a partition is its share-partition start offset, kept with the rest of
the share-partition's state in `__share_group_state`. The coordinator reads it with
ReadShareGroupStateSummary, sets it with InitializeShareGroupState in the next state epoch (which
fences the share-partition's leader: it reads the new state on its next request), and forgets it
with DeleteShareGroupState, each through the state partition's leader (`ShareStateStore`). Only an
empty group's offsets change (NON_EMPTY_GROUP), as in Kafka; an unknown group asked to alter its
offsets is created, empty. The share-partitions this broker has in memory for the group are
dropped at once; those led elsewhere are fenced by their next write.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from gregor.broker.share_runtime import ShareRuntime
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError


@dataclass(frozen=True)
class PartitionOffset:
    """One partition's start offset (-1: the group has no state there) or its error."""

    index: int
    start_offset: int = -1
    leader_epoch: int = -1
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


async def describe(shares: ShareRuntime, group_id: str,
                   topics: dict[str, list[int]] | None) -> dict[str, list[PartitionOffset]]:
    """The start offsets of `topics` (None: every partition of each topic the group may have
    state on); an unknown topic's or partition's entries carry UNKNOWN_TOPIC_OR_PARTITION."""
    group = shares.groups.groups.get(group_id)
    if topics is None:
        names = sorted(group.state_topics) if group is not None else []
        topics = {name: list(range(shares.partition_count(name) or 0)) for name in names}
        topics = {name: partitions for name, partitions in topics.items() if partitions}
    answers = {name: asyncio.gather(*(_start_offset(shares, group_id, name, index) for index in partitions))
               for name, partitions in topics.items()}
    return {name: list(await pending) for name, pending in answers.items()}


async def _start_offset(shares: ShareRuntime, group_id: str, topic: str, index: int) -> PartitionOffset:
    topic_id = shares.topic_id(topic)
    count = shares.partition_count(topic)
    if topic_id is None or count is None or not 0 <= index < count:
        return PartitionOffset(index, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not shares.store.exists():
        return PartitionOffset(index, leader_epoch=shares.leader_epoch(topic, index))
    try:
        start, _ = await shares.store.summary((group_id, topic_id, index))
    except KafkaError as error:
        return PartitionOffset(index, error=ErrorCode(error.code), message=str(error))
    return PartitionOffset(index, start, shares.leader_epoch(topic, index))


async def alter(shares: ShareRuntime, group_id: str,
                offsets: dict[str, dict[int, int]]) -> tuple[ErrorCode, dict[str, dict[int, ErrorCode]]]:
    """Start the group at the given offset on each partition (its next state epoch); the group's
    error, else each partition's."""
    error = shares.groups.offsets_error(group_id, create=True)
    if error:
        return error, {}
    if not shares.store.exists():
        await shares.store.ensure_topic()
    keys = [(group_id, topic_id, index) for topic, partitions in offsets.items()
            if (topic_id := shares.topic_id(topic)) is not None for index in partitions]
    if not shares.store.exists() or not all(shares.store.has_leader(key) for key in keys):
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, {}  # the state partitions are being created: retriable
    group = shares.groups.groups[group_id]
    results: dict[str, dict[int, ErrorCode]] = {}
    for topic, partitions in offsets.items():
        count = shares.partition_count(topic)
        if count is not None:
            group.state_topics.add(topic)
        codes = await asyncio.gather(*(_initialize(shares, group_id, topic, index, offset, count)
                                       for index, offset in partitions.items()))
        results[topic] = dict(zip(partitions, codes))
    await _persist(shares, group_id)
    return ErrorCode.NONE, results


async def _persist(shares: ShareRuntime, group_id: str) -> None:
    """The group's change (its state topics, its deletion) written to `__consumer_offsets`."""
    pending = shares.persist_group(group_id)
    if pending is not None:
        await pending


async def _initialize(shares: ShareRuntime, group_id: str, topic: str, index: int, offset: int,
                      count: int | None) -> ErrorCode:
    topic_id = shares.topic_id(topic)
    if topic_id is None or count is None or not 0 <= index < count:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if offset < 0:
        return ErrorCode.INVALID_REQUEST
    key = (group_id, topic_id, index)
    try:
        _, epoch = await shares.store.summary(key)
    except KafkaError as error:
        return ErrorCode(error.code)
    shares.forget((group_id, topic, index))
    return await shares.store.initialize(key, epoch + 1, offset)


async def delete_topics(shares: ShareRuntime, group_id: str,
                        topics: list[str]) -> tuple[ErrorCode, dict[str, ErrorCode]]:
    """Forget the group's state on every partition of `topics`; the group's error, else each topic's."""
    error = shares.groups.offsets_error(group_id, create=False)
    if error:
        return error, {}
    group = shares.groups.groups[group_id]
    results = {}
    for topic in topics:
        results[topic] = await _delete_topic(shares, group_id, topic)
        if not results[topic]:
            group.state_topics.discard(topic)
    await _persist(shares, group_id)
    return ErrorCode.NONE, results


async def delete_group(shares: ShareRuntime, group_id: str) -> ErrorCode:
    """DeleteGroups for a share group: an empty one, with its state on every partition."""
    error = shares.groups.offsets_error(group_id, create=False)
    if error:
        return error
    topics = sorted(shares.groups.groups[group_id].state_topics)
    errors = [await _delete_topic(shares, group_id, topic) for topic in topics]
    failed = [code for code in errors if code and code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    if failed:
        return failed[0]
    error = shares.groups.delete(group_id)
    await _persist(shares, group_id)
    return error


async def _delete_topic(shares: ShareRuntime, group_id: str, topic: str) -> ErrorCode:
    topic_id = shares.topic_id(topic)
    count = shares.partition_count(topic)
    if topic_id is None or count is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    for index in range(count):
        shares.forget((group_id, topic, index))
    if not shares.store.exists():
        return ErrorCode.NONE
    codes = await asyncio.gather(*(shares.store.delete((group_id, topic_id, index)) for index in range(count)))
    return next((code for code in codes if code), ErrorCode.NONE)
