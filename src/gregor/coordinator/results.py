"""Answers of the coordinator, as plain values the broker maps onto response messages.

Field names follow the wire messages; `None` stands for a null string where the message has
one (protocol type and name in JoinGroup v7+ / SyncGroup v5+ responses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

from gregor.coordinator.offset_metadata import TopicPartition
from gregor.protocol.error_codes import ErrorCode

NO_GENERATION = -1
NO_OFFSET = -1


@dataclass(frozen=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    """`members` is filled for the leader only; `skip_assignment` (JoinGroup v9+) tells a static
    leader that rejoined a stable group to keep the current assignment instead of computing one."""

    error: ErrorCode
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True)
class LeaveResult:
    """A top-level error leaves `members` empty (as Kafka answers)."""

    error: ErrorCode
    members: tuple[LeaveMemberResult, ...] = ()


@dataclass(frozen=True)
class OffsetCommitResult:
    errors: Mapping[TopicPartition, ErrorCode]


class PartitionOffset(NamedTuple):
    """A committed offset as OffsetFetch returns it; -1 / -1 / "" when there is none."""

    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode


@dataclass(frozen=True)
class OffsetFetchResult:
    error: ErrorCode
    partitions: Mapping[TopicPartition, PartitionOffset] = field(default_factory=dict)


@dataclass(frozen=True)
class OffsetDeleteResult:
    """A top-level error leaves `partitions` empty (as Kafka answers)."""

    error: ErrorCode
    partitions: Mapping[TopicPartition, ErrorCode] = field(default_factory=dict)


@dataclass(frozen=True)
class MemberDescription:
    """`metadata` and `assignment` are empty unless the group is Stable (as in Kafka)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    error: ErrorCode
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True)
class ListGroupsResult:
    error: ErrorCode
    groups: tuple[GroupOverview, ...] = ()
