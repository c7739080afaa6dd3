"""A classic group: its state machine, members, chosen protocol and committed offsets.

Legal transitions, as Kafka's GroupState.validPreviousStates (target <- allowed sources):

    PreparingRebalance  <- Empty, Stable, CompletingRebalance
                           (first join, member change, failure, leader rejoin)
    CompletingRebalance <- PreparingRebalance   (every expected member joined, or the
                                                 rebalance timeout expired)
    Stable              <- CompletingRebalance  (the leader's assignment is persisted)
    Empty               <- PreparingRebalance   (the rebalance ended with no member)
    Dead                <- any state            (deleted, expired, or unloaded)

A Dead group never leaves the coordinator's cache in that state for long: it is dropped at once,
so requests only ever see the other four.
"""

from __future__ import annotations

import enum
from collections import Counter
from typing import Iterable

from gregor.coordinator.member import MemberMetadata, Protocols
from gregor.coordinator.offset_metadata import OffsetAndMetadata, TopicPartition
from gregor.coordinator.results import JoinMember
from gregor.coordinator.subscription import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from gregor.protocol.error_codes import ErrorCode


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(RuntimeError):
    """A transition the table above forbids: a coordinator bug, never a client's fault."""


class Group:
    """Membership bookkeeping follows Kafka's GroupMetadata: members in join order (the first
    member leads, and the next one in order when the leader leaves), a count of members with a
    parked JoinGroup, and per protocol how many members support it."""

    def __init__(self, group_id: str, state: GroupState, now_ms: int | None) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp_ms = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_offset_commits: dict[TopicPartition, OffsetAndMetadata] = {}
        self.subscribed_topics: frozenset[str] | None = None
        self.new_member_added = False
        # (delay, remaining) while the join timer is an initial delay (Kafka's InitialDelayedJoin)
        self.initial_join: tuple[int, int] | None = None
        self._supported_protocols: Counter[str] = Counter()
        self._num_awaiting_join = 0

    def __repr__(self) -> str:
        return (f"Group({self.group_id!r}, {self.state.value}, generation={self.generation_id}, "
                f"members={list(self.members)})")

    # -- state

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateTransition(f"group {self.group_id}: {self.state.value} -> {state.value}")
        self.state = state
        self.state_timestamp_ms = now_ms

    @property
    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # -- members

    def member_error(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """Kafka's validateCurrentMember: a static instance must be mapped to exactly this member
        id (FENCED_INSTANCE_ID when a newer incarnation took it over), and the member must exist."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def num_awaiting_join(self) -> int:
        return self._num_awaiting_join

    def add(self, member: MemberMetadata, join_token: object | None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._supported_protocols.update(member.protocol_names)
        self.set_join_token(member, join_token)
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        """Drop a member (its parked requests are the caller's to answer) or a pending member id."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self._supported_protocols.subtract(member.protocol_names)
            if member.is_awaiting_join:
                self._num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def replace_static_member(self, group_instance_id: str, old_member_id: str,
                              new_member_id: str) -> MemberMetadata:
        """Give a static member a new member id, keeping everything else (and its leadership)."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def update_member(self, member: MemberMetadata, protocols: Protocols, rebalance_timeout_ms: int,
                      session_timeout_ms: int, join_token: object | None) -> None:
        self._supported_protocols.subtract(member.protocol_names)
        member.supported_protocols = protocols
        self._supported_protocols.update(member.protocol_names)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        self.set_join_token(member, join_token)

    def set_join_token(self, member: MemberMetadata, join_token: object | None) -> None:
        if join_token is not None and not member.is_awaiting_join:
            self._num_awaiting_join += 1
        elif join_token is None and member.is_awaiting_join:
            self._num_awaiting_join -= 1
        member.join_token = join_token

    def take_join_token(self, member: MemberMetadata) -> object | None:
        """The member's parked JoinGroup, which the caller now answers; None if there is none."""
        token = member.join_token
        self.set_join_token(member, None)
        return token

    @staticmethod
    def take_sync_token(member: MemberMetadata) -> object | None:
        token, member.sync_token = member.sync_token, None
        return token

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self._num_awaiting_join and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [member for member in self.members.values() if not member.is_awaiting_join]

    @property
    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of any member: how long a rebalance may wait for rejoins."""
        return max((member.rebalance_timeout_ms for member in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else hand leadership to any member that did.

        False when the group has no leader or no member rejoined: the rebalance cannot finish.
        """
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    # -- protocols

    def candidate_protocols(self) -> frozenset[str]:
        """Protocols every member supports."""
        size = len(self.members)
        return frozenset(name for name, count in self._supported_protocols.items() if count == size)

    def supports_protocols(self, protocol_type: str, protocol_names: frozenset[str]) -> bool:
        """Whether a member with these protocols may join (Kafka's supportsProtocols).

        An Empty group takes any non-empty protocol type and protocol list; otherwise the type must
        match and one of the protocols must be supported by every current member.
        """
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocol_names)
        size = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self._supported_protocols[name] == size for name in protocol_names))

    def select_protocol(self) -> str:
        """The candidate protocol most members prefer; ties go to the one voted for first."""
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return max(votes, key=votes.__getitem__)

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> tuple[JoinMember, ...]:
        """Every member with its metadata for the chosen protocol: what the leader assigns from."""
        protocol = self.protocol_name or ""
        return tuple(JoinMember(member.member_id, member.group_instance_id, member.metadata(protocol))
                     for member in self.members.values())

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Topics a `consumer` group subscribes to; None when not a consumer group or unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            member_topics = subscribed_topics(member.metadata(self.protocol_name))
            if member_topics is None:
                return None
            topics |= member_topics
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """True when unknown, to be safe: offsets of a topic maybe in use are never deleted."""
        return self.subscribed_topics is None or topic in self.subscribed_topics

    # -- offsets

    @property
    def has_offsets(self) -> bool:
        return bool(self.offsets or self.pending_offset_commits)

    def prepare_offset_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        self.pending_offset_commits.update(offsets)

    def on_offset_commit_append(self, partition: TopicPartition, offset: OffsetAndMetadata) -> None:
        """A commit is durable: make it visible, unless its partition was deleted meanwhile."""
        staged = self.pending_offset_commits.get(partition)
        if staged is None:
            return
        self.offsets[partition] = offset
        if staged == offset:
            del self.pending_offset_commits[partition]

    def fail_pending_offset_write(self, partition: TopicPartition, offset: OffsetAndMetadata) -> None:
        if self.pending_offset_commits.get(partition) == offset:
            del self.pending_offset_commits[partition]

    def remove_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """Forget the offsets (committed and pending) of `partitions`; returns the committed ones."""
        removed = {}
        for partition in partitions:
            self.pending_offset_commits.pop(partition, None)
            offset = self.offsets.pop(partition, None)
            if offset is not None:
                removed[partition] = offset
        return removed
