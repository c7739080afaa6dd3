"""Errors of a failed `__consumer_offsets` append, translated for the client that waits on it.

A client cannot act on NOT_ENOUGH_REPLICAS or MESSAGE_TOO_LARGE from a JoinGroup/SyncGroup or
OffsetCommit, so Kafka maps append errors onto the coordinator errors its clients handle
(GroupMetadataManager.storeGroup and maybeConvertOffsetCommitError).
"""

from __future__ import annotations

from gregor.protocol.error_codes import ErrorCode

_COMMON = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}
_TOO_LARGE = (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE)

_GROUP_STORE = {
    **_COMMON,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    **{error: ErrorCode.UNKNOWN_SERVER_ERROR for error in _TOO_LARGE},
}
_OFFSET_COMMIT = {
    **_COMMON,
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    **{error: ErrorCode.INVALID_COMMIT_OFFSET_SIZE for error in _TOO_LARGE},
}


def group_store_error(error: ErrorCode) -> ErrorCode:
    """The error a JoinGroup/SyncGroup gets when its group metadata record failed to append."""
    return _GROUP_STORE.get(error, error)


def offset_commit_error(error: ErrorCode) -> ErrorCode:
    """The error an OffsetCommit gets when its offset records failed to append."""
    return _OFFSET_COMMIT.get(error, error)
