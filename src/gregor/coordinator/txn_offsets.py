"""Offsets committed inside transactions (TxnOffsetCommit), held per producer until the
transaction's marker reaches the group's `__consumer_offsets` partition.

Kafka's GroupMetadataManager keeps them in pendingTransactionalOffsetCommits: written to the log
in the producer's transactional batch, invisible to OffsetFetch, made the group's committed
offsets by a COMMIT marker and dropped by an ABORT marker (onTransactionCompleted). While any are
pending for a partition, OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from gregor.coordinator.offset_metadata import OffsetAndMetadata, TopicPartition
from gregor.coordinator.offsets_records import decode_key, decode_offset_commit_value
from gregor.protocol.messages.group_coordinator_records.offset_commit_key import OffsetCommitKey

PendingOffsets = dict[str, dict[TopicPartition, OffsetAndMetadata]]
"""group id -> partition -> offset, for one producer on one `__consumer_offsets` partition."""


class TransactionalOffsets:
    def __init__(self) -> None:
        self._pending: dict[int, dict[int, PendingOffsets]] = {}  # partition -> producer id -> offsets

    def add(self, partition: int, producer_id: int, group_id: str,
            offsets: Iterable[tuple[TopicPartition, OffsetAndMetadata]]) -> None:
        by_group = self._pending.setdefault(partition, {}).setdefault(producer_id, {})
        by_group.setdefault(group_id, {}).update(offsets)

    def complete(self, partition: int, producer_id: int) -> PendingOffsets:
        """The producer's transaction ended on `partition`: its offsets, which leave this store."""
        producers = self._pending.get(partition)
        if producers is None:
            return {}
        offsets = producers.pop(producer_id, {})
        if not producers:
            del self._pending[partition]
        return offsets

    def is_pending(self, group_id: str, topic_partition: TopicPartition) -> bool:
        return any(topic_partition in by_group.get(group_id, {}) for by_group in self._all())

    def has_pending(self, group_id: str) -> bool:
        return any(group_id in by_group for by_group in self._all())

    def _all(self) -> Iterator[PendingOffsets]:
        for producers in self._pending.values():
            yield from producers.values()

    def forget_partition(self, partition: int) -> None:
        """The `__consumer_offsets` partition was unloaded: its pending offsets go with it."""
        self._pending.pop(partition, None)

    def forget_topic_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        gone = set(partitions)
        for by_group in self._all():
            for offsets in by_group.values():
                for topic_partition in gone & offsets.keys():
                    del offsets[topic_partition]


def pending_from_records(records: Iterable[tuple[bytes, bytes | None]]
                         ) -> Iterator[tuple[str, TopicPartition, OffsetAndMetadata]]:
    """The offset commits among a transaction's records (a TxnOffsetCommit writes nothing else)."""
    for key_bytes, value_bytes in records:
        key = decode_key(key_bytes)
        if isinstance(key, OffsetCommitKey) and value_bytes is not None:
            yield key.group, (key.topic, key.partition), decode_offset_commit_value(value_bytes)
