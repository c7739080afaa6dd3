"""One committed offset as the coordinator keeps it (Kafka's OffsetAndMetadata)."""

from __future__ import annotations

from dataclasses import dataclass

NO_LEADER_EPOCH = -1

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class OffsetAndMetadata:
    """`expire_timestamp_ms` is set only for commits that asked for a retention time (OffsetCommit
    v2-v4); such an offset expires at that instant instead of by `offsets.retention.minutes`."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None
