"""Share sessions (KIP-932's ShareFetch sessions), sans-IO: which partitions a member fetches
from this broker, and the epoch its next request must carry.

Epoch 0 opens a session (replacing any the member had here), with the partitions the request
names; a positive epoch must be the session's next one (INVALID_SHARE_SESSION_EPOCH otherwise,
SHARE_SESSION_NOT_FOUND without a session) and adds the partitions named, drops the forgotten
ones; -1 closes it, after its acknowledgements are applied, and the member's acquired records on
this broker go back to the group. A session belongs to the connection of its latest request;
when that connection closes the session goes with it (`close_connection`), and the edge hands the
member's records back, as Kafka 4.1's share session cache does on a client disconnect. Kafka's
ShareSessionCache, without its size bound.
"""

from __future__ import annotations

import uuid
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
    connection_id: int | None = None  # of the request that last used it
    partitions: dict[TopicPartition, None] = field(default_factory=dict)  # insertion-ordered set
    # the topic id the member last named for each topic: a topic deleted and created again under
    # its name is another topic, not served to a session that still names the old one
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)


class ShareSessions:
    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        self._by_connection: dict[int, set[tuple[str, str]]] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def update(self, group_id: str, member_id: str, epoch: int, added: list[TopicPartition],
               forgotten: list[TopicPartition],
               connection_id: int | None = None) -> tuple[ErrorCode, ShareSession | None]:
        """The session a request at `epoch`, arriving on `connection_id`, works in (for -1, the
        one it closes), or the error that refuses the request."""
        key = (group_id, member_id)
        if epoch == OPEN_EPOCH:
            self._drop(key)
            session = ShareSession(group_id, member_id)
            self._sessions[key] = session
        else:
            found = self._sessions.get(key)
            if found is None:
                return ErrorCode.SHARE_SESSION_NOT_FOUND, None
            if epoch == CLOSE_EPOCH:
                self._drop(key)
                return ErrorCode.NONE, found
            if epoch != found.next_epoch:
                return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
            session = found
        session.next_epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
        self._bind(key, session, connection_id)
        for tp in added:
            session.partitions[tp] = None
        for tp in forgotten:
            session.partitions.pop(tp, None)
        return ErrorCode.NONE, session

    def remove_member(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._drop((group_id, member_id))

    def close_connection(self, connection_id: int) -> list[ShareSession]:
        """Remove the sessions last used on the connection that closed; those removed."""
        keys = self._by_connection.pop(connection_id, set())
        return [self._sessions.pop(key) for key in keys]

    def _bind(self, key: tuple[str, str], session: ShareSession, connection_id: int | None) -> None:
        if session.connection_id == connection_id:
            return
        if session.connection_id is not None:
            self._unbind(key, session.connection_id)
        session.connection_id = connection_id
        if connection_id is not None:
            self._by_connection.setdefault(connection_id, set()).add(key)

    def _unbind(self, key: tuple[str, str], connection_id: int) -> None:
        keys = self._by_connection.get(connection_id)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_connection[connection_id]

    def _drop(self, key: tuple[str, str]) -> ShareSession | None:
        session = self._sessions.pop(key, None)
        if session is not None and session.connection_id is not None:
            self._unbind(key, session.connection_id)
        return session
