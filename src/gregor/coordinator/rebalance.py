"""The rebalance protocol of a classic group: what happens between JoinGroup and Stable.

Kafka drives this with delayed operations in purgatories (DelayedJoin, InitialDelayedJoin,
DelayedSync, DelayedHeartbeat); here each is a timer in the manager's deadline queue and a
handler below, run from `GroupCoordinator.tick`. Operations append their effects to `out`.

Every parked JoinGroup or SyncGroup is answered exactly once. Kafka silently drops the parked
request of a member that is removed or sends the same request again (the client has long timed
out by then); here such a request is answered (UNKNOWN_MEMBER_ID for a removed member,
REBALANCE_IN_PROGRESS for a superseded one) so the broker never holds a request forever. When
the group moves to another coordinator, every parked request gets NOT_COORDINATOR (Kafka
answers only those the group's state makes it wait on).
"""

from __future__ import annotations

import logging
from typing import Mapping

from gregor.coordinator.effects import Effect, Respond
from gregor.coordinator.group_metadata_manager import GroupMetadataManager, TimerKey, TimerKind
from gregor.coordinator.group_state import Group, GroupState
from gregor.coordinator.member import MemberMetadata, Protocols
from gregor.coordinator.results import JoinResult, SyncResult
from gregor.protocol.error_codes import ErrorCode

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a new member's first JoinGroup may stay parked (Kafka's NewMemberJoinTimeoutMs):
it cannot heartbeat without its member id, so a client that gave up would otherwise linger."""

log = logging.getLogger("gregor.coordinator")


class Rebalancer:
    def __init__(self, manager: GroupMetadataManager) -> None:
        self._manager = manager
        self._deadlines = manager.deadlines
        self._initial_delay_ms = manager.config.group_initial_rebalance_delay_ms

    # -- parked requests

    @staticmethod
    def answer_join(group: Group, member: MemberMetadata, result: JoinResult, out: list[Effect]) -> bool:
        token = group.take_join_token(member)
        if token is None:
            return False
        out.append(Respond(token, result))
        return True

    @staticmethod
    def answer_sync(group: Group, member: MemberMetadata, result: SyncResult, out: list[Effect]) -> bool:
        token = group.take_sync_token(member)
        if token is None:
            return False
        out.append(Respond(token, result))
        return True

    def park_sync(self, group: Group, member: MemberMetadata, token: object, out: list[Effect]) -> None:
        """Keep a SyncGroup until the assignment is known; one parked before is superseded."""
        self.answer_sync(group, member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS), out)
        member.sync_token = token

    @staticmethod
    def join_result(group: Group, member_id: str, with_members: bool, leader: str | None = None,
                    skip_assignment: bool = False) -> JoinResult:
        """The current generation as a JoinGroup answer; `members` only when `with_members`."""
        return JoinResult(ErrorCode.NONE, member_id, group.generation_id, group.protocol_type, group.protocol_name,
                          (group.leader_id if leader is None else leader) or "",
                          group.current_member_metadata() if with_members else (), skip_assignment)

    # -- timers

    def schedule_heartbeat(self, group: Group, member: MemberMetadata, now_ms: int,
                           timeout_ms: int | None = None) -> None:
        """The member proved alive: its session (default) or `timeout_ms` starts over."""
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self._deadlines.schedule(TimerKey(TimerKind.HEARTBEAT, group.group_id, member.member_id), now_ms + timeout)

    def add_pending_member(self, group: Group, member_id: str, session_timeout_ms: int, now_ms: int) -> None:
        """A member id handed out with MEMBER_ID_REQUIRED, kept for one session timeout."""
        group.pending_members.add(member_id)
        self._deadlines.schedule(TimerKey(TimerKind.PENDING_MEMBER, group.group_id, member_id),
                                 now_ms + session_timeout_ms)

    def on_timer(self, key: TimerKey, group: Group, now_ms: int, out: list[Effect]) -> None:
        if key.kind is TimerKind.HEARTBEAT:
            self._on_heartbeat_expired(group, group.members[key.member_id], now_ms, out)
        elif key.kind is TimerKind.PENDING_MEMBER:
            self.remove_pending_member_and_update_group(group, key.member_id, now_ms, out)
        elif key.kind is TimerKind.JOIN:
            self._on_join_expired(group, now_ms, out)
        else:
            self._on_sync_expired(group, now_ms, out)

    def _on_heartbeat_expired(self, group: Group, member: MemberMetadata, now_ms: int, out: list[Effect]) -> None:
        """A member with a parked JoinGroup or SyncGroup is waiting on the group, not dead; it gets
        a fresh session when that request is answered. A new member has no such excuse."""
        if member.is_new or not (member.is_awaiting_join or member.is_awaiting_sync):
            log.info("member %s of group %s failed, removing it", member.member_id, group.group_id)
            self.remove_member_and_update_group(group, member, now_ms, out, "heartbeat expired")

    def _on_join_expired(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """Kafka's InitialDelayedJoin: while new members keep arriving during the first rebalance,
        wait another initial delay, up to the rebalance timeout; then complete the join."""
        if group.initial_join is not None:
            delay_ms, remaining_ms = group.initial_join
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                next_delay_ms = min(self._initial_delay_ms, remaining_ms)
                group.initial_join = (next_delay_ms, max(remaining_ms - delay_ms, 0))
                self._deadlines.schedule(TimerKey(TimerKind.JOIN, group.group_id), now_ms + next_delay_ms)
                return
        self.complete_join(group, now_ms, out)

    def _on_sync_expired(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """Members that got their JoinGroup answer but never sent SyncGroup are removed.

        The timer is cancelled once every member synced or a rebalance starts, so some are missing.
        """
        missing = sorted(group.pending_sync_members)
        for member_id in missing:
            self.forget_member(group, member_id, out)
        self.prepare_rebalance(group, now_ms, out, f"members {missing} did not sync in time")

    # -- membership changes

    def forget_member(self, group: Group, member_id: str, out: list[Effect]) -> None:
        """Remove a member (answering what it has parked) or a pending member id, with its timers."""
        member = group.members.get(member_id)
        if member is not None:
            self.answer_join(group, member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""), out)
            self.answer_sync(group, member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID), out)
        group.remove(member_id)
        self._deadlines.cancel(TimerKey(TimerKind.HEARTBEAT, group.group_id, member_id))
        self._deadlines.cancel(TimerKey(TimerKind.PENDING_MEMBER, group.group_id, member_id))

    def add_member_and_rebalance(self, group: Group, member: MemberMetadata, token: object, now_ms: int,
                                 out: list[Effect], reason: str) -> None:
        member.is_new = True
        if group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, token)
        self._deadlines.cancel(TimerKey(TimerKind.PENDING_MEMBER, group.group_id, member.member_id))
        self.schedule_heartbeat(group, member, now_ms, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self.maybe_prepare_rebalance(group, now_ms, out, reason)

    def update_member_and_rebalance(self, group: Group, member: MemberMetadata, protocols: Protocols,
                                    rebalance_timeout_ms: int, session_timeout_ms: int, token: object,
                                    now_ms: int, out: list[Effect], reason: str) -> None:
        """Take the member's new protocols and park its JoinGroup (superseding one parked before)."""
        self.answer_join(group, member, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id), out)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, token)
        self.maybe_prepare_rebalance(group, now_ms, out, reason)

    def remove_member_and_update_group(self, group: Group, member: MemberMetadata, now_ms: int,
                                       out: list[Effect], reason: str) -> None:
        self.forget_member(group, member.member_id, out)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance(group, now_ms, out, f"removing member {member.member_id}: {reason}")
        elif group.state is GroupState.PREPARING_REBALANCE:
            self.maybe_complete_join(group, now_ms, out)

    def remove_pending_member_and_update_group(self, group: Group, member_id: str, now_ms: int,
                                               out: list[Effect]) -> None:
        self.forget_member(group, member_id, out)
        if group.state is GroupState.PREPARING_REBALANCE:
            self.maybe_complete_join(group, now_ms, out)

    # -- the rebalance itself

    def maybe_prepare_rebalance(self, group: Group, now_ms: int, out: list[Effect], reason: str) -> None:
        if group.can_rebalance:
            self.prepare_rebalance(group, now_ms, out, reason)

    def prepare_rebalance(self, group: Group, now_ms: int, out: list[Effect], reason: str) -> None:
        """Enter PreparingRebalance: members awaiting an assignment are told to rejoin, and the
        join ends after the initial delay (from Empty) or the longest rebalance timeout."""
        if group.state is GroupState.COMPLETING_REBALANCE:
            self.reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms, out)
        self.cancel_sync_expiration(group)
        if group.state is GroupState.EMPTY:
            delay_ms = self._initial_delay_ms
            group.initial_join = (delay_ms, max(group.rebalance_timeout_ms - delay_ms, 0))
        else:
            delay_ms = group.rebalance_timeout_ms
            group.initial_join = None
        log.info("preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
                 group.group_id, group.state.value, group.generation_id, reason)
        group.transition_to(GroupState.PREPARING_REBALANCE, now_ms)
        self._deadlines.schedule(TimerKey(TimerKind.JOIN, group.group_id), now_ms + delay_ms)
        self.maybe_complete_join(group, now_ms, out)

    def maybe_complete_join(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """End PreparingRebalance early once every member rejoined (not during an initial delay)."""
        key = TimerKey(TimerKind.JOIN, group.group_id)
        if (group.initial_join is None and self._deadlines.deadline(key) is not None
                and group.has_all_members_joined()):
            self._deadlines.cancel(key)
            self.complete_join(group, now_ms, out)

    def complete_join(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """Kafka's onCompleteJoin: drop dynamic members that did not rejoin, start the next
        generation and answer every parked JoinGroup (the leader gets the member list)."""
        group.initial_join = None
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                self.forget_member(group, member.member_id, out)
        if group.members and not group.maybe_elect_new_joined_leader():
            # Only static members that have not rejoined are left: wait for them (or their
            # session timeouts) for another rebalance timeout. At least 1 ms, so a zero timeout
            # cannot spin within one tick.
            log.warning("group %s could not complete rebalance because no members rejoined", group.group_id)
            self._deadlines.schedule(TimerKey(TimerKind.JOIN, group.group_id),
                                     now_ms + max(group.rebalance_timeout_ms, 1))
            return
        group.init_next_generation(now_ms)
        if group.state is GroupState.EMPTY:
            out.append(self._manager.store_group(group, {}, now_ms, None))
            return
        for member in group.members.values():
            is_leader = group.is_leader(member.member_id)
            self.answer_join(group, member, self.join_result(group, member.member_id, is_leader), out)
            self.schedule_heartbeat(group, member, now_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._deadlines.schedule(TimerKey(TimerKind.SYNC, group.group_id), now_ms + group.rebalance_timeout_ms)

    def remove_pending_sync_member(self, group: Group, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._deadlines.cancel(TimerKey(TimerKind.SYNC, group.group_id))

    def cancel_sync_expiration(self, group: Group) -> None:
        group.pending_sync_members.clear()
        self._deadlines.cancel(TimerKey(TimerKind.SYNC, group.group_id))

    def set_and_propagate_assignment(self, group: Group, assignment: Mapping[str, bytes], now_ms: int,
                                     out: list[Effect]) -> None:
        for member in group.members.values():
            member.assignment = assignment[member.member_id]
        self._propagate_assignment(group, ErrorCode.NONE, now_ms, out)

    def reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode, now_ms: int,
                                             out: list[Effect]) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, now_ms, out)

    def _propagate_assignment(self, group: Group, error: ErrorCode, now_ms: int, out: list[Effect]) -> None:
        ok = error is ErrorCode.NONE
        for member in group.members.values():
            result = SyncResult(error, group.protocol_type if ok else None, group.protocol_name if ok else None,
                                member.assignment)
            if self.answer_sync(group, member, result, out):
                # Its session may have run out while it waited on the leader or the append.
                self.schedule_heartbeat(group, member, now_ms)

    # -- partition ownership

    def on_group_loaded(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """Loaded members get a fresh session; a group above group.max.size must rebalance."""
        if len(group.members) > self._manager.config.group_max_size:
            self.prepare_rebalance(group, now_ms, out, "freshly-loaded group is over capacity")
        for member in group.members.values():
            self.schedule_heartbeat(group, member, now_ms)

    def on_group_unloaded(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """Another broker coordinates the group now: every parked request gets NOT_COORDINATOR."""
        group.transition_to(GroupState.DEAD, now_ms)
        for member in group.members.values():
            self.answer_join(group, member, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id), out)
            self.answer_sync(group, member, SyncResult(ErrorCode.NOT_COORDINATOR), out)
        self._manager.remove_group(group)
