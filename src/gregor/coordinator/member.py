"""One member of a classic group (Kafka's MemberMetadata).

A member parks at most one JoinGroup and one SyncGroup: the broker's token for the request is
kept in `join_token` / `sync_token` until the coordinator answers it. The session deadline is
not kept here but in the coordinator's deadline queue, so there is one place to look for timers.
"""

from __future__ import annotations

Protocols = tuple[tuple[str, bytes], ...]


class MemberMetadata:
    """`is_new` marks a member whose first JoinGroup is still parked: it has no member id the
    client knows yet, so only the new-member join timeout (not heartbeats) can expire it."""

    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout_ms",
                 "session_timeout_ms", "protocol_type", "supported_protocols", "assignment",
                 "join_token", "sync_token", "is_new")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 supported_protocols: Protocols, assignment: bytes = b"") -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols = supported_protocols
        self.assignment = assignment
        self.join_token: object | None = None
        self.sync_token: object | None = None
        self.is_new = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_token is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_token is not None

    @property
    def protocol_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.supported_protocols)

    def metadata(self, protocol: str) -> bytes:
        """The metadata this member sent for `protocol`; KeyError if it does not support it."""
        for name, metadata in self.supported_protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        """Whether a rejoin carries exactly the protocols (names, order, metadata) already known."""
        return tuple(protocols) == self.supported_protocols

    def vote(self, candidates: frozenset[str]) -> str:
        """The member's most preferred protocol among `candidates` (Kafka's MemberMetadata.vote)."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def __repr__(self) -> str:
        return (f"MemberMetadata(member_id={self.member_id!r}, group_instance_id={self.group_instance_id!r}, "
                f"protocols={[name for name, _ in self.supported_protocols]})")
