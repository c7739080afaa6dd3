"""Which committed offsets have outlived `offsets.retention.minutes` (Kafka 2.1+, KIP-211).

An offset is kept while its group may still need it:
- an Empty group with a protocol type (its members all left) loses all offsets once the
  retention period has passed since it became Empty (since the commit, for groups loaded from
  an old record without a state timestamp);
- a Stable `consumer` group whose subscriptions are known loses offsets of topics no member
  subscribes to, retention after their commit;
- a group without a protocol type (simple consumers that only commit) loses each offset
  retention after its commit;
- other groups (rebalancing, or not `consumer`) keep everything.
A commit made with an explicit retention time (OffsetCommit v2-v4) expires at its own expire
timestamp instead. Offsets with a commit still being written are never expired.
"""

from __future__ import annotations

from gregor.coordinator.group_state import Group, GroupState
from gregor.coordinator.offset_metadata import TopicPartition


def expired_offsets(group: Group, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    subscribed: frozenset[str] = frozenset()
    became_empty_ms: int | None = None
    if group.protocol_type is not None and group.state is GroupState.EMPTY:
        became_empty_ms = group.state_timestamp_ms
    elif group.is_consumer_group and group.subscribed_topics is not None and group.state is GroupState.STABLE:
        subscribed = group.subscribed_topics
    elif group.protocol_type is not None:
        return []
    expired = []
    for partition, offset in group.offsets.items():
        if partition[0] in subscribed or partition in group.pending_offset_commits:
            continue
        if offset.expire_timestamp_ms is not None:
            if now_ms >= offset.expire_timestamp_ms:
                expired.append(partition)
        elif now_ms - (offset.commit_timestamp_ms if became_empty_ms is None else became_empty_ms) >= retention_ms:
            expired.append(partition)
    return expired
