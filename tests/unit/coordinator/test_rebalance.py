"""SyncGroup, Heartbeat, LeaveGroup and the timeouts that keep a group from wedging."""

from __future__ import annotations

from gregor.coordinator import GroupState
from gregor.coordinator.rebalance import NEW_MEMBER_JOIN_TIMEOUT_MS
from gregor.protocol.error_codes import ErrorCode

from .harness import REBALANCE_MS, SESSION_MS, Harness


def test_session_timeout_removes_a_silent_member_and_rebalances() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(3)
    h.keep_alive(ids[1:], generation, SESSION_MS - 1)
    assert len(h.coordinator.group("g").members) == 3
    h.advance(1)
    group = h.coordinator.group("g")
    assert list(group.members) == ids[1:]
    assert group.state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(ids[1], generation) is ErrorCode.REBALANCE_IN_PROGRESS
    tokens = [h.join(member_id=member_id, client_id=f"c{i + 1}") for i, member_id in enumerate(ids[1:])]
    results = [h.answer(token) for token in tokens]
    assert {r.generation_id for r in results} == {generation + 1}
    assert results[0].leader == ids[1] != leader
    assert len(results[0].members) == 2


def test_a_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout() -> None:
    """It keeps heartbeating (so its session never runs out) but never rejoins."""
    h = Harness()
    ids, generation, leader = h.form_group(3)
    tokens = [h.join(member_id=member_id, client_id=f"c{i}") for i, member_id in enumerate(ids[:2])]
    started = h.now
    h.keep_alive([ids[2]], generation, REBALANCE_MS - 1)
    assert not any(h.answered(token) for token in tokens)
    h.advance(1)
    assert h.now - started == REBALANCE_MS
    assert [h.answer(token).generation_id for token in tokens] == [generation + 1] * 2
    assert list(h.coordinator.group("g").members) == ids[:2]
    assert h.heartbeat(ids[2], generation) is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_that_dies_mid_rebalance_is_dropped_at_its_session_timeout() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(3)
    h.advance(1000)
    tokens = [h.join(member_id=member_id, client_id=f"c{i}") for i, member_id in enumerate(ids[:2])]
    h.advance_until(lambda: h.answered(tokens[0]))
    assert h.answer(tokens[0]).generation_id == generation + 1
    assert len(h.answer(tokens[0]).members) == 2


def test_a_leader_that_never_rejoins_hands_leadership_to_a_member_that_did() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    token = h.join(member_id=ids[1], client_id="c1", protocols=[("range", b"changed")])
    h.keep_alive([leader], generation, REBALANCE_MS)
    result = h.answer(token)
    assert (result.leader, [m.member_id for m in result.members]) == (ids[1], [ids[1]])


def test_a_new_member_stuck_in_a_long_rebalance_times_out() -> None:
    """New members cannot heartbeat while their first JoinGroup is parked: 5 minutes at most."""
    h = Harness()
    ids, generation, leader = h.form_group(1, rebalance=600_000)
    newcomer = h.join(require_known=False, client_id="new", rebalance=600_000)
    h.keep_alive([leader], generation, NEW_MEMBER_JOIN_TIMEOUT_MS)
    assert h.answer(newcomer).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_followers_that_never_sync_are_removed_after_the_rebalance_timeout() -> None:
    h = Harness()
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(3)]
    h.advance_until(lambda: h.answered(tokens[0]))
    results = [h.answer(token) for token in tokens]
    ids = [r.member_id for r in results]
    generation = results[0].generation_id
    leader_sync = h.sync(ids[0], generation, assignments={m: b"x" for m in ids})
    follower_sync = h.sync(ids[1], generation)
    assert h.answer(leader_sync).error is h.answer(follower_sync).error is ErrorCode.NONE
    h.keep_alive(ids, generation, REBALANCE_MS)
    group = h.coordinator.group("g")
    assert ids[2] not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE


def test_a_leader_that_never_syncs_sends_everyone_back_to_join() -> None:
    h = Harness()
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    leader, follower = (h.answer(token) for token in tokens)
    follower_sync = h.sync(follower.member_id, follower.generation_id)
    h.keep_alive([leader.member_id, follower.member_id], leader.generation_id, REBALANCE_MS)
    assert h.answer(follower_sync).error is ErrorCode.REBALANCE_IN_PROGRESS
    group = h.coordinator.group("g")
    assert list(group.members) == [follower.member_id]
    assert group.state is GroupState.PREPARING_REBALANCE


def test_sync_errors() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    assert h.sync_now(ids[1], generation + 1).error is ErrorCode.ILLEGAL_GENERATION
    assert h.sync_now("nobody", generation).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync_now("nobody", 1, group="other").error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync_now(ids[1], generation, protocol_type="connect").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync_now(ids[1], generation, protocol_name="sticky").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ok = h.sync_now(ids[1], generation, protocol_type="consumer", protocol_name="range")
    assert (ok.error, ok.assignment) == (ErrorCode.NONE, ids[1].encode())
    h.join(member_id=leader, client_id="c0")
    assert h.sync_now(ids[1], generation).error is ErrorCode.REBALANCE_IN_PROGRESS


def test_members_missing_from_the_leaders_assignment_get_an_empty_one() -> None:
    h = Harness()
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    leader, follower = (h.answer(token) for token in tokens)
    follower_sync = h.sync(follower.member_id, 1)
    h.sync(leader.member_id, 1, assignments={leader.member_id: b"all", "stranger": b"?"})
    assert h.answer(follower_sync).assignment == b""


def test_heartbeat_errors() -> None:
    h = Harness()
    assert h.heartbeat("m", 0) is ErrorCode.UNKNOWN_MEMBER_ID
    ids, generation, leader = h.form_group(2)
    assert h.heartbeat(ids[1], generation) is ErrorCode.NONE
    assert h.heartbeat(ids[1], generation - 1) is ErrorCode.ILLEGAL_GENERATION
    assert h.heartbeat("nobody", generation) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(ids[1], generation, instance="never-joined") is ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeats_while_completing_rebalance_are_fine() -> None:
    h = Harness()
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    follower = h.answer(tokens[1])
    assert h.coordinator.group("g").state is GroupState.COMPLETING_REBALANCE
    assert h.heartbeat(follower.member_id, follower.generation_id) is ErrorCode.NONE


def test_batched_leave_with_per_member_errors_triggers_a_rebalance() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(3)
    result = h.leave((ids[1], None, "shutdown"), ("nobody", None, None), (ids[2], "not-mine", None))
    assert result.error is ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id, m.error) for m in result.members] == [
        (ids[1], None, ErrorCode.NONE), ("nobody", None, ErrorCode.UNKNOWN_MEMBER_ID),
        (ids[2], "not-mine", ErrorCode.UNKNOWN_MEMBER_ID)]
    group = h.coordinator.group("g")
    assert list(group.members) == [ids[0], ids[2]]
    assert group.state is GroupState.PREPARING_REBALANCE


def test_leave_of_an_unknown_group_and_of_a_pending_member() -> None:
    h = Harness()
    result = h.leave("a", "b", group="nothing-here")
    assert result.error is ErrorCode.NONE
    assert [m.error for m in result.members] == [ErrorCode.UNKNOWN_MEMBER_ID] * 2
    pending = h.new_member_id()
    assert h.leave(pending).members[0].error is ErrorCode.NONE
    assert not h.coordinator.group("g").pending_members


def test_leaving_releases_the_rebalance_for_the_others() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(3)
    tokens = [h.join(member_id=member_id, client_id=f"c{i}") for i, member_id in enumerate(ids[:2])]
    assert not h.answered(tokens[0])
    h.leave(ids[2])
    assert [h.answer(token).generation_id for token in tokens] == [generation + 1] * 2


def test_a_parked_join_of_a_member_that_leaves_is_answered() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    token = h.join(member_id=leader, client_id="c0")
    h.leave(leader)
    assert h.answer(token).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_all_members_leaving_ends_empty() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(3)
    h.leave(*ids)
    group = h.coordinator.group("g")
    assert (group.state, group.members, group.generation_id) == (GroupState.EMPTY, {}, generation + 1)


def test_a_failed_group_write_fails_the_sync_and_restarts_the_rebalance() -> None:
    h = Harness(auto_append=False)
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    leader, follower = (h.answer(token) for token in tokens)
    follower_sync = h.sync(follower.member_id, 1)
    leader_sync = h.sync(leader.member_id, 1, assignments={leader.member_id: b"a", follower.member_id: b"b"})
    assert not h.answered(leader_sync) and h.coordinator.pending_appends == 1
    h.complete_appends(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert h.answer(leader_sync).error is h.answer(follower_sync).error is ErrorCode.NOT_COORDINATOR
    assert h.coordinator.group("g").state is GroupState.PREPARING_REBALANCE


def test_group_write_errors_are_mapped_for_clients() -> None:
    for append_error, client_error in [(ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REBALANCE_IN_PROGRESS),
                                       (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                       (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR)]:
        h = Harness(auto_append=False)
        token = h.join(require_known=False)
        h.advance(3000)
        member = h.answer(token)
        sync = h.sync(member.member_id, 1, assignments={member.member_id: b"a"})
        h.complete_appends(append_error)
        assert h.answer(sync).error is client_error


def test_a_write_completing_after_the_group_moved_on_changes_nothing() -> None:
    h = Harness(auto_append=False)
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    leader, follower = (h.answer(token) for token in tokens)
    leader_sync = h.sync(leader.member_id, 1, assignments={leader.member_id: b"a"})
    h.leave(follower.member_id)  # a rebalance starts before the write is done
    assert h.answer(leader_sync).error is ErrorCode.REBALANCE_IN_PROGRESS
    h.complete_appends()
    assert h.coordinator.group("g").state is GroupState.PREPARING_REBALANCE
    assert len(h.responses[leader_sync]) == 1


def test_a_sync_parked_twice_answers_the_first_with_rebalance_in_progress() -> None:
    h = Harness()
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    follower = h.answer(tokens[1])
    first = h.sync(follower.member_id, 1)
    second = h.sync(follower.member_id, 1)
    assert h.answer(first).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert not h.answered(second)


def test_next_deadline_tracks_sessions() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(1)
    assert h.coordinator.next_deadline() == h.now + SESSION_MS
    h.advance(1000)
    h.heartbeat(leader, generation)
    assert h.coordinator.next_deadline() == h.now + SESSION_MS
