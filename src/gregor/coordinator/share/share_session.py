"""Share sessions (KIP-932's ShareFetch sessions), sans-IO: which partitions a member fetches
from this broker, and the epoch its next request must carry.

Epoch 0 opens a session (replacing any the member had here), with the partitions the request
names; a positive epoch must be the session's next one (INVALID_SHARE_SESSION_EPOCH otherwise,
SHARE_SESSION_NOT_FOUND without a session) and adds the partitions named, drops the forgotten
ones; -1 closes it, after its acknowledgements are applied, and the member's acquired records on
this broker go back to the group. Kafka's ShareSessionCache, without its size bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gregor.protocol.error_codes import ErrorCode

OPEN_EPOCH = 0
CLOSE_EPOCH = -1
TopicPartition = tuple[str, int]


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    next_epoch: int = 1
    partitions: dict[TopicPartition, None] = field(default_factory=dict)  # insertion-ordered set


class ShareSessions:
    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def update(self, group_id: str, member_id: str, epoch: int, added: list[TopicPartition],
               forgotten: list[TopicPartition]) -> tuple[ErrorCode, ShareSession | None]:
        """The session a request at `epoch` works in (for -1, the one it closes), or the error
        that refuses the request."""
        key = (group_id, member_id)
        if epoch == OPEN_EPOCH:
            session = ShareSession(group_id, member_id)
            self._sessions[key] = session
        else:
            found = self._sessions.get(key)
            if found is None:
                return ErrorCode.SHARE_SESSION_NOT_FOUND, None
            if epoch == CLOSE_EPOCH:
                del self._sessions[key]
                return ErrorCode.NONE, found
            if epoch != found.next_epoch:
                return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
            session = found
        session.next_epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
        for tp in added:
            session.partitions[tp] = None
        for tp in forgotten:
            session.partitions.pop(tp, None)
        return ErrorCode.NONE, session

    def remove_member(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)
