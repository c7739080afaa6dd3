"""A member of a consumer group: what it subscribes to and where its reconciliation stands.

`state` is Kafka's MemberState (its int8 is what ConsumerGroupCurrentMemberAssignmentValue
stores):

    STABLE                 the member has its target assignment at the group's assignment epoch
    UNREVOKED_PARTITIONS   it must first give up `partitions_pending_revocation` (it keeps its
                           epoch meanwhile, and gets nothing new)
    UNRELEASED_PARTITIONS  it is at the target epoch but some target partitions are still held
                           by other members; it gets them once they are revoked
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from gregor.coordinator.consumer.assignment import EMPTY, Assignment

LEAVE_EPOCH = -1
"""MemberEpoch of a member leaving the group."""
STATIC_LEAVE_EPOCH = -2
"""MemberEpoch of a static member leaving for a while (it keeps its assignment for its session)."""


@dataclass(frozen=True)
class ClassicMemberInfo:
    """What a member speaking the classic protocol in a consumer group also has (Kafka's
    ClassicMemberMetadata): its session timeout and its JoinGroup protocols (name, metadata)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol the member is answered with: its first (its preferred) one."""
        return self.protocols[0][0]


class MemberState(enum.IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned_partitions: Assignment = field(default_factory=lambda: EMPTY)
    partitions_pending_revocation: Assignment = field(default_factory=lambda: EMPTY)
    classic: ClassicMemberInfo | None = None
    """Set for a member that joined with JoinGroup (a classic consumer in a consumer group)."""

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """The member at `epoch`, remembering the epoch it leaves (a lost answer is tolerated)."""
        if epoch == self.member_epoch:
            return self
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch)

    @property
    def subscription_changed_fields(self) -> tuple[object, ...]:
        """What the group epoch depends on: a change of any of these is a new group epoch."""
        return (self.subscribed_topic_names, self.subscribed_topic_regex, self.server_assignor, self.rack_id)

    @property
    def metadata_fields(self) -> tuple[object, ...]:
        """What ConsumerGroupMemberMetadataValue stores: a change is written."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.subscribed_topic_regex, self.rebalance_timeout_ms, self.server_assignor, self.classic)

    @property
    def assignment_fields(self) -> tuple[object, ...]:
        """What ConsumerGroupCurrentMemberAssignmentValue stores: a change is written."""
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned_partitions,
                self.partitions_pending_revocation)
