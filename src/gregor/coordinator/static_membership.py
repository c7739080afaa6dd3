"""A static member coming back (KIP-345): a known group.instance.id joins with no member id.

That is a restart of the same consumer: the new incarnation takes over the old member's place,
leadership and assignment, and the old member id is fenced (FENCED_INSTANCE_ID). In a Stable
group whose protocol choice stays the same this costs no rebalance, only a new group record;
the JoinGroup answer waits for that write, and a failed write undoes the takeover. Kafka's
GroupCoordinator.updateStaticMemberAndRebalance.
"""

from __future__ import annotations

from gregor.coordinator.effects import Effect, Respond
from gregor.coordinator.group_metadata_manager import GroupMetadataManager, TimerKey, TimerKind
from gregor.coordinator.group_state import Group, GroupState
from gregor.coordinator.member import MemberMetadata
from gregor.coordinator.rebalance import Rebalancer
from gregor.coordinator.results import JoinResult, SyncResult
from gregor.protocol.error_codes import ErrorCode


def take_over_static_member(manager: GroupMetadataManager, rebalancer: Rebalancer, token: object, group: Group,
                            joining: MemberMetadata, supports_skip_assignment: bool, now_ms: int,
                            out: list[Effect], reason: str) -> None:
    """`joining` carries the request (its new member id and protocols); `token` its JoinGroup."""
    instance_id = joining.group_instance_id
    assert instance_id is not None
    old_member_id = group.static_members[instance_id]
    new_member_id = joining.member_id
    current_leader = group.leader_id or ""
    member = group.members[old_member_id]
    rebalancer.answer_join(group, member, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id), out)
    rebalancer.answer_sync(group, member, SyncResult(ErrorCode.FENCED_INSTANCE_ID), out)
    manager.deadlines.cancel(TimerKey(TimerKind.HEARTBEAT, group.group_id, old_member_id))
    group.replace_static_member(instance_id, old_member_id, new_member_id)
    rebalancer.schedule_heartbeat(group, member, now_ms)
    previous = (member.supported_protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
    group.update_member(member, joining.supported_protocols, joining.rebalance_timeout_ms,
                        joining.session_timeout_ms, token)
    why = f"static member {instance_id} rejoined as {new_member_id}; client reason: {reason}"
    if group.state is GroupState.COMPLETING_REBALANCE:
        # The leader may be assigning to the old member id: start over.
        rebalancer.prepare_rebalance(group, now_ms, out, why)
        return
    if group.state is not GroupState.STABLE:
        return  # PreparingRebalance: the member simply is among those that rejoined
    if group.protocol_name != group.select_protocol():
        rebalancer.maybe_prepare_rebalance(group, now_ms, out, why + " with a change of protocol")
        return

    def stored(error: ErrorCode, done_ms: int, done_out: list[Effect]) -> None:
        if group.state is GroupState.DEAD or group.static_members.get(instance_id) != new_member_id:
            return  # unloaded, or taken over again: its JoinGroup has been answered already
        if error is not ErrorCode.NONE:
            manager.deadlines.cancel(TimerKey(TimerKind.HEARTBEAT, group.group_id, new_member_id))
            parked = group.take_join_token(member)
            group.update_member(member, *previous, None)
            group.replace_static_member(instance_id, new_member_id, old_member_id)
            rebalancer.schedule_heartbeat(group, member, done_ms)
            if parked is not None:
                done_out.append(Respond(parked, JoinResult(error, "", group.generation_id, group.protocol_type,
                                                           group.protocol_name, current_leader)))
        elif supports_skip_assignment:
            # JoinGroup v9+: a static leader learns it leads, but keeps the current assignment.
            is_leader = group.is_leader(new_member_id)
            rebalancer.answer_join(group, member, rebalancer.join_result(
                group, new_member_id, is_leader, skip_assignment=is_leader), done_out)
        else:
            # Older clients get the old leader id, so a returning leader does not compute an
            # assignment that a stable group would ignore.
            rebalancer.answer_join(group, member, rebalancer.join_result(
                group, new_member_id, False, leader=current_leader), done_out)

    assignment = {member_id: m.assignment for member_id, m in group.members.items()}
    out.append(manager.store_group(group, assignment, now_ms, stored))
