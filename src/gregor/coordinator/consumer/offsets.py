"""Which OffsetCommit / OffsetFetch a consumer group accepts (Kafka's ConsumerGroup
validateOffsetCommit / validateOffsetFetch).

A request without a member (epoch below 0, as admin tools and consumers that assign partitions
themselves send) may commit only while the group has no members, and may always fetch. A member
must be known (UNKNOWN_MEMBER_ID) and at its current epoch: a newer epoch is FENCED_MEMBER_EPOCH,
an older one STALE_MEMBER_EPOCH (the member refreshes its epoch with a heartbeat and retries).
Members of a consumer group commit with OffsetCommit v9+, the first version carrying the epoch;
its classic members commit with their generation, any version (ILLEGAL_GENERATION otherwise).
A transactional producer's TxnOffsetCommit (v3+ carry the member, KIP-447) is checked the same way
at any version, a stale epoch answered ILLEGAL_GENERATION (Kafka's validateTransactionalOffsetCommit).
"""

from __future__ import annotations

from gregor.coordinator.consumer.group import ConsumerGroup
from gregor.protocol.error_codes import ErrorCode

FIRST_MEMBER_EPOCH_COMMIT_VERSION = 9


def commit_error(group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int) -> ErrorCode | None:
    if member_epoch < 0 and not group.members:
        return None
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member.classic is not None:  # a classic consumer commits with its generation, its member epoch
        return ErrorCode.ILLEGAL_GENERATION if member_epoch != member.member_epoch else None
    if api_version < FIRST_MEMBER_EPOCH_COMMIT_VERSION:
        return ErrorCode.UNSUPPORTED_VERSION
    return _epoch_error(member_epoch, member.member_epoch)


def txn_commit_error(group: ConsumerGroup, member_id: str, member_epoch: int) -> ErrorCode | None:
    error = commit_error(group, member_id, member_epoch, FIRST_MEMBER_EPOCH_COMMIT_VERSION)
    return ErrorCode.ILLEGAL_GENERATION if error is ErrorCode.STALE_MEMBER_EPOCH else error


def fetch_error(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
    if member_epoch < 0 and member_id is None:
        return None
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.STALE_MEMBER_EPOCH if member_epoch != member.member_epoch else None


def _epoch_error(received: int, expected: int) -> ErrorCode | None:
    if received > expected:
        return ErrorCode.FENCED_MEMBER_EPOCH
    if received < expected:
        return ErrorCode.STALE_MEMBER_EPOCH
    return None
