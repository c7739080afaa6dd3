"""State-epoch fencing of a share-partition's persisted state (Kafka's share coordinator rules).

The state epoch of a share-partition's state moves only when an administrator changes where the
group starts on the partition (AlterShareGroupOffsets, a reset, deleting the offsets or the group:
InitializeShareGroupState with a higher epoch, DeleteShareGroupState). The partition's leader
writes with the epoch it read, so a write from a share-partition loaded before such a change
carries an older epoch and is refused with FENCED_STATE_EPOCH: the leader drops that state and
reads the new one. -1 in a write means "not checked", as in Kafka.
"""

from __future__ import annotations

from gregor.coordinator.share.share_partition import ShareSnapshot
from gregor.protocol.error_codes import ErrorCode

UNINITIALIZED_START_OFFSET = -1
DEFAULT_STATE_EPOCH = 0


def write_error(stored: ShareSnapshot | None, state_epoch: int) -> ErrorCode:
    """WriteShareGroupState: refused when the stored state is of a later epoch."""
    if state_epoch != -1 and stored is not None and stored.state_epoch > state_epoch:
        return ErrorCode.FENCED_STATE_EPOCH
    return ErrorCode.NONE


def initialize_error(stored: ShareSnapshot | None, state_epoch: int) -> ErrorCode:
    """InitializeShareGroupState: the new state must not be of an earlier epoch than the stored one."""
    if stored is not None and stored.state_epoch > state_epoch:
        return ErrorCode.FENCED_STATE_EPOCH
    return ErrorCode.NONE


def initialized(state_epoch: int, start_offset: int) -> ShareSnapshot:
    """The state InitializeShareGroupState stores: nothing in flight, the given start offset
    (-1: where `share.auto.offset.reset` says, when the partition is first fetched)."""
    return ShareSnapshot(start_offset, state_epoch, ())
