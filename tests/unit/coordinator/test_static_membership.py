"""Static membership (group.instance.id, KIP-345): restarts without rebalances, and fencing."""

from __future__ import annotations

import re

from gregor.coordinator import GroupState
from gregor.coordinator.offsets_records import decode_group_metadata_value
from gregor.protocol.error_codes import ErrorCode

from .harness import REBALANCE_MS, SESSION_MS, Harness


def form_static_group(h: Harness, instances: list[str]) -> tuple[dict[str, str], int]:
    """Static members join (no MEMBER_ID_REQUIRED round for them) and sync; instance -> member id."""
    tokens = {instance: h.join(instance=instance, client_id=instance) for instance in instances}
    h.advance_until(lambda: all(h.answered(token) for token in tokens.values()))
    results = {instance: h.answer(token) for instance, token in tokens.items()}
    ids = {instance: result.member_id for instance, result in results.items()}
    generation = results[instances[0]].generation_id
    leader = results[instances[0]].leader
    for instance, member_id in ids.items():
        assignments = {m: f"assigned-{i}".encode() for i, m in ids.items()} if member_id == leader else None
        h.sync(member_id, generation, instance=instance, assignments=assignments)
    assert h.coordinator.group("g").state is GroupState.STABLE
    return ids, generation


def test_static_members_get_ids_prefixed_with_their_instance_id() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    assert all(re.fullmatch(f"{instance}-[0-9a-f-]{{36}}", member_id) for instance, member_id in ids.items())
    assert h.coordinator.group("g").static_members == ids


def test_restart_with_same_protocols_keeps_generation_and_assignment() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    old_id = ids["i-2"]
    records_before = len(h.log[h.coordinator.partition_for("g")])
    result = h.join_now(instance="i-2", client_id="i-2")
    group = h.coordinator.group("g")
    assert result.error is ErrorCode.NONE and result.member_id != old_id
    assert (result.generation_id, group.generation_id, group.state) == (generation, generation, GroupState.STABLE)
    assert result.leader == ids["i-1"] and result.members == ()
    sync = h.sync_now(result.member_id, generation, instance="i-2")
    assert (sync.error, sync.assignment) == (ErrorCode.NONE, b"assigned-i-2")
    # The old incarnation is fenced everywhere.
    assert h.heartbeat(old_id, generation, instance="i-2") is ErrorCode.FENCED_INSTANCE_ID
    assert h.sync_now(old_id, generation, instance="i-2").error is ErrorCode.FENCED_INSTANCE_ID
    assert h.join_now(member_id=old_id, instance="i-2").error is ErrorCode.FENCED_INSTANCE_ID
    assert h.commit_now({("t", 0): (1, -1, "")}, generation=generation, member_id=old_id,
                        instance="i-2").errors[("t", 0)] is ErrorCode.FENCED_INSTANCE_ID
    # The new member id is persisted.
    log = h.log[h.coordinator.partition_for("g")]
    assert len(log) == records_before + 1
    assert {m.member_id for m in decode_group_metadata_value(log[-1][1]).members} == {ids["i-1"], result.member_id}


def test_a_restarted_static_leader_is_not_told_it_leads_before_v9() -> None:
    """Before JoinGroup v9 the old leader id is returned, so it does not compute an assignment a
    stable group would ignore."""
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    result = h.join_now(instance="i-1", client_id="i-1")
    assert result.leader == ids["i-1"] != result.member_id
    assert h.coordinator.group("g").leader_id == result.member_id


def test_a_restarted_static_leader_skips_the_assignment_from_v9() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    result = h.join_now(instance="i-1", client_id="i-1", skip=True)
    assert (result.leader, result.skip_assignment) == (result.member_id, True)
    assert {m.member_id for m in result.members} == {result.member_id, ids["i-2"]}
    follower = h.join_now(instance="i-2", client_id="i-2", skip=True)
    assert (follower.skip_assignment, follower.members, follower.leader) == (False, (), result.member_id)


def test_restart_with_a_different_protocol_choice_rebalances() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1"])
    result = h.join_now(instance="i-1", client_id="i-1", protocols=[("sticky", b""), ("range", b"")])
    # Alone in the group it has rejoined already, so the rebalance completes at once.
    assert (result.generation_id, result.protocol_name) == (generation + 1, "sticky")


def test_restart_while_completing_rebalance_rebalances() -> None:
    h = Harness()
    tokens = [h.join(instance=f"i-{i}", client_id=f"i-{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    follower = h.answer(tokens[1])
    parked = h.sync(follower.member_id, follower.generation_id, instance="i-1")
    h.join(instance="i-1", client_id="i-1")
    assert h.answer(parked).error is ErrorCode.FENCED_INSTANCE_ID
    assert h.coordinator.group("g").state is GroupState.PREPARING_REBALANCE


def test_restart_during_a_rebalance_fences_the_parked_join() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    old_join = h.join(member_id=ids["i-1"], instance="i-1", client_id="i-1")
    new_join = h.join(instance="i-1", client_id="i-1")
    assert h.answer(old_join).error is ErrorCode.FENCED_INSTANCE_ID
    h.join(member_id=ids["i-2"], instance="i-2", client_id="i-2")
    result = h.answer(new_join)
    assert result.generation_id == generation + 1 and result.member_id != ids["i-1"]


def test_a_static_member_that_does_not_rejoin_stays_until_its_session_ends() -> None:
    """Dynamic laggards are dropped when the join completes; static ones only by their session."""
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    token = h.join(member_id=ids["i-1"], instance="i-1", client_id="i-1", protocols=[("range", b"v2")])
    h.keep_alive([ids["i-2"]], generation, REBALANCE_MS)
    group = h.coordinator.group("g")
    assert set(group.members) == set(ids.values())
    assert h.answer(token).generation_id == generation + 1
    h.keep_alive([ids["i-1"]], generation + 1, SESSION_MS)
    assert set(group.members) == {ids["i-1"]}


def test_a_rebalance_with_no_static_member_rejoining_waits_for_their_sessions() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    h.leave((ids["i-2"], "i-2", None))
    group = h.coordinator.group("g")
    assert group.state is GroupState.PREPARING_REBALANCE
    h.advance(SESSION_MS)  # i-1 never rejoined nor heartbeated
    assert (group.state, group.members) == (GroupState.EMPTY, {})


def test_leave_by_instance_id_alone_triggers_a_rebalance() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    result = h.leave(("", "i-2", "admin removal"), ("", "i-9", None), ("", None, None))
    assert [m.error for m in result.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID,
                                                 ErrorCode.UNKNOWN_MEMBER_ID]
    group = h.coordinator.group("g")
    assert "i-2" not in group.static_members and group.state is GroupState.PREPARING_REBALANCE


def test_leave_with_a_stale_member_id_is_fenced() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    h.join_now(instance="i-2", client_id="i-2")
    assert h.leave((ids["i-2"], "i-2", None)).members[0].error is ErrorCode.FENCED_INSTANCE_ID


def test_a_failed_write_undoes_the_takeover() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1", "i-2"])
    h.auto_append = False
    token = h.join(instance="i-2", client_id="i-2")
    assert not h.answered(token)
    h.complete_appends(ErrorCode.NOT_ENOUGH_REPLICAS)
    result = h.answer(token)
    assert (result.error, result.member_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, "")
    group = h.coordinator.group("g")
    assert group.static_members["i-2"] == ids["i-2"]
    assert h.heartbeat(ids["i-2"], generation, instance="i-2") is ErrorCode.NONE


def test_pending_member_ids_are_never_static() -> None:
    h = Harness()
    pending = h.new_member_id()
    assert h.join_now(member_id=pending, instance="i-1").error is ErrorCode.UNKNOWN_SERVER_ERROR


def test_static_member_sessions_restart_after_a_takeover() -> None:
    h = Harness()
    ids, generation = form_static_group(h, ["i-1"])
    h.advance(SESSION_MS - 1000)
    result = h.join_now(instance="i-1", client_id="i-1")
    h.advance(SESSION_MS - 1)
    assert list(h.coordinator.group("g").members) == [result.member_id]
    h.advance(REBALANCE_MS)
    assert h.coordinator.group("g").state is GroupState.EMPTY
