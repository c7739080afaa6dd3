"""JoinGroup: the first rebalance, member ids, errors, the initial delay and protocol selection."""

from __future__ import annotations

import re

import pytest

from gregor.coordinator import GroupCoordinatorConfig, GroupState
from gregor.coordinator.effects import AppendRecords
from gregor.coordinator.offsets_records import decode_group_metadata_value, decode_key
from gregor.coordinator.results import JoinMember
from gregor.protocol.error_codes import ErrorCode

from .harness import NOW, REBALANCE_MS, Harness, subscription

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def test_three_members_form_a_group_in_one_rebalance() -> None:
    h = Harness()
    metadata = {f"c{i}": subscription("orders", f"t{i}") for i in range(3)}
    ids = [h.new_member_id(client_id=f"c{i}") for i in range(3)]
    tokens = [h.join(member_id=member_id, client_id=f"c{i}", protocols=[("range", metadata[f"c{i}"])])
              for i, member_id in enumerate(ids)]
    assert not any(h.answered(token) for token in tokens)
    assert h.coordinator.group("g").state is GroupState.PREPARING_REBALANCE

    h.advance_until(lambda: h.answered(tokens[0]))
    results = [h.answer(token) for token in tokens]
    leader, *followers = results
    assert {r.error for r in results} == {ErrorCode.NONE}
    assert {r.generation_id for r in results} == {1}
    assert {r.leader for r in results} == {ids[0]}
    assert {(r.protocol_type, r.protocol_name) for r in results} == {("consumer", "range")}
    assert [r.member_id for r in results] == ids
    assert leader.members == tuple(JoinMember(member_id, None, metadata[f"c{i}"]) for i, member_id in enumerate(ids))
    assert all(r.members == () for r in followers)
    group = h.coordinator.group("g")
    assert group.state is GroupState.COMPLETING_REBALANCE

    follower_syncs = [h.sync(member_id, 1) for member_id in ids[1:]]
    assert not any(h.answered(token) for token in follower_syncs)
    leader_sync = h.sync(ids[0], 1, assignments={member_id: f"a-{member_id}".encode() for member_id in ids})
    for member_id, token in zip(ids, [leader_sync, *follower_syncs]):
        result = h.answer(token)
        assert (result.error, result.assignment) == (ErrorCode.NONE, f"a-{member_id}".encode())
        assert (result.protocol_type, result.protocol_name) == ("consumer", "range")
    assert group.state is GroupState.STABLE
    assert group.generation_id == 1

    # One group record, in the group's partition, with the assignment.
    (key, value), = h.log[h.coordinator.partition_for("g")]
    assert decode_key(key).group == "g"
    stored = decode_group_metadata_value(value)
    assert (stored.generation, stored.protocol, stored.leader) == (1, "range", ids[0])
    assert [(m.member_id, m.subscription, m.assignment) for m in stored.members] == [
        (member_id, metadata[f"c{i}"], f"a-{member_id}".encode()) for i, member_id in enumerate(ids)]


def test_a_new_member_first_gets_an_id_with_member_id_required() -> None:
    h = Harness()
    result = h.join_now(client_id="my-client")
    assert result.error is ErrorCode.MEMBER_ID_REQUIRED
    assert re.fullmatch(f"my-client-{UUID}", result.member_id)
    group = h.coordinator.group("g")
    assert group.pending_members == {result.member_id} and not group.members
    token = h.join(member_id=result.member_id, client_id="my-client")
    assert group.pending_members == set() and list(group.members) == [result.member_id]
    h.advance(3000)
    assert h.answer(token).error is ErrorCode.NONE


def test_member_ids_come_from_the_injected_random() -> None:
    assert Harness(seed=1).new_member_id() == Harness(seed=1).new_member_id() != Harness(seed=2).new_member_id()


def test_before_v4_a_new_member_joins_at_once_with_a_new_id() -> None:
    h = Harness()
    token = h.join(require_known=False)
    h.advance(3000)
    result = h.answer(token)
    assert result.error is ErrorCode.NONE and re.fullmatch(f"client-{UUID}", result.member_id)
    assert result.leader == result.member_id


def test_a_pending_member_id_expires_after_the_session_timeout() -> None:
    h = Harness()
    member_id = h.new_member_id(session=7000)
    h.advance(6999)
    assert member_id in h.coordinator.group("g").pending_members
    h.advance(1)
    assert member_id not in h.coordinator.group("g").pending_members
    assert h.join_now(member_id=member_id).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_pending_member_holds_back_the_rebalance_until_it_joins_or_expires() -> None:
    h = Harness()
    ids, generation, _ = h.form_group(2)
    h.new_member_id(session=8000)
    tokens = [h.join(member_id=member_id, client_id=f"c{i}") for i, member_id in enumerate(ids)]
    h.advance(7999)
    assert not any(h.answered(token) for token in tokens)
    h.advance(1)
    assert [h.answer(token).generation_id for token in tokens] == [generation + 1] * 2


def test_unknown_member_ids_are_rejected() -> None:
    h = Harness()
    assert h.join_now(member_id="nobody").error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coordinator.group("g") is None  # a known member id never creates a group
    h.form_group(1)
    result = h.join_now(member_id="nobody")
    assert (result.error, result.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "nobody")


@pytest.mark.parametrize("session, error", [
    (5999, ErrorCode.INVALID_SESSION_TIMEOUT), (6000, ErrorCode.MEMBER_ID_REQUIRED),
    (1800000, ErrorCode.MEMBER_ID_REQUIRED), (1800001, ErrorCode.INVALID_SESSION_TIMEOUT)])
def test_session_timeout_bounds(session: int, error: ErrorCode) -> None:
    assert Harness().join_now(session=session).error is error


def test_inconsistent_group_protocol() -> None:
    h = Harness()
    assert h.join_now(protocol_type="").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join_now(protocols=[]).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ids, _, _ = h.form_group(1, protocols=[("range", b""), ("sticky", b"")])
    assert h.join_now(protocol_type="connect").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    result = h.join_now(protocols=[("roundrobin", b"")])
    assert (result.error, result.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    rejoin = h.join_now(member_id=ids[0], client_id="c0", protocols=[("roundrobin", b"")])
    assert (rejoin.error, rejoin.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ids[0])
    assert h.join_now(protocols=[("sticky", b"")]).error is ErrorCode.MEMBER_ID_REQUIRED


def test_invalid_group_id() -> None:
    h = Harness()
    assert h.join_now(group="").error is ErrorCode.INVALID_GROUP_ID
    assert h.sync_now("m", 1, group="").error is ErrorCode.INVALID_GROUP_ID
    assert h.heartbeat("m", 1, group="") is ErrorCode.INVALID_GROUP_ID
    assert h.leave("m", group="").error is ErrorCode.INVALID_GROUP_ID


def test_group_max_size() -> None:
    h = Harness(GroupCoordinatorConfig(group_max_size=2))
    ids, _, _ = h.form_group(2)
    result = h.join_now(client_id="third")
    assert (result.error, result.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    # Members already in the group may still rejoin.
    assert not h.answered(h.join(member_id=ids[0], client_id="c0"))


def test_group_max_size_while_rebalancing_counts_members_that_rejoined() -> None:
    h = Harness(GroupCoordinatorConfig(group_max_size=2))
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(3)]
    assert h.answer(tokens[2]).error is ErrorCode.GROUP_MAX_SIZE_REACHED
    h.advance(REBALANCE_MS)
    assert [h.answer(token).error for token in tokens[:2]] == [ErrorCode.NONE] * 2


def test_initial_delay_waits_for_more_members() -> None:
    h = Harness()
    first = h.join(require_known=False)
    h.advance(2999)
    assert not h.answered(first)
    h.advance(1)
    assert h.answer(first).error is ErrorCode.NONE


def test_initial_delay_is_extended_per_new_member_up_to_the_rebalance_timeout() -> None:
    """Kafka's InitialDelayedJoin: each delay that saw a new member is followed by another, while
    rebalance timeout - delay remains; a steady stream of members cannot delay it further."""
    h = Harness()
    tokens = [h.join(require_known=False, rebalance=10_000)]
    while not h.answered(tokens[0]):
        h.advance(1000)
        tokens.append(h.join(require_known=False, rebalance=10_000, client_id=f"c{len(tokens)}"))
    assert h.now - NOW == 10_000


def test_initial_delay_extension_stops_when_members_stop_coming() -> None:
    h = Harness()
    first = h.join(require_known=False)
    h.advance(1000)
    h.join(require_known=False)
    h.advance(4999)  # the first delay ends at 3000 (a member came), the second at 6000
    assert not h.answered(first)
    h.advance(1)
    assert h.answer(first).generation_id == 1


def test_protocol_is_chosen_among_protocols_every_member_supports() -> None:
    h = Harness()
    tokens = [h.join(require_known=False, client_id="a", protocols=[("range", b"ra"), ("roundrobin", b"rr-a")]),
              h.join(require_known=False, client_id="b", protocols=[("roundrobin", b"rr-b"), ("range", b"rb")]),
              h.join(require_known=False, client_id="c", protocols=[("roundrobin", b"rr-c")])]
    h.advance(REBALANCE_MS)
    leader = h.answer(tokens[0])
    assert leader.protocol_name == "roundrobin"
    assert [m.metadata for m in leader.members] == [b"rr-a", b"rr-b", b"rr-c"]


def test_protocol_with_most_votes_wins() -> None:
    h = Harness()
    both = [("sticky", b""), ("range", b"")]
    tokens = [h.join(require_known=False, protocols=list(reversed(both))),
              h.join(require_known=False, protocols=both),
              h.join(require_known=False, protocols=both)]
    h.advance(REBALANCE_MS)
    assert h.answer(tokens[0]).protocol_name == "sticky"


def test_follower_rejoining_a_stable_group_with_same_metadata_gets_the_current_generation() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    result = h.join_now(member_id=ids[1], client_id="c1")
    assert (result.error, result.generation_id, result.leader, result.members) == (
        ErrorCode.NONE, generation, leader, ())
    assert h.coordinator.group("g").state is GroupState.STABLE


def test_leader_rejoining_a_stable_group_forces_a_rebalance() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    token = h.join(member_id=leader, client_id="c0")
    assert h.coordinator.group("g").state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(ids[1], generation) is ErrorCode.REBALANCE_IN_PROGRESS
    follower = h.join(member_id=ids[1], client_id="c1")
    assert h.answer(token).generation_id == h.answer(follower).generation_id == generation + 1


def test_follower_with_new_metadata_forces_a_rebalance() -> None:
    h = Harness()
    ids, generation, _ = h.form_group(2)
    h.join(member_id=ids[1], client_id="c1", protocols=[("range", b"new")])
    assert h.coordinator.group("g").state is GroupState.PREPARING_REBALANCE


def test_rejoin_while_completing_rebalance_returns_the_same_generation() -> None:
    """A member that lost its JoinGroup answer asks again; the leader gets the members again."""
    h = Harness()
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    leader, follower = (h.answer(token) for token in tokens)
    again = h.join_now(member_id=leader.member_id, client_id="c0")
    assert (again.generation_id, again.members) == (leader.generation_id, leader.members)
    assert h.join_now(member_id=follower.member_id, client_id="c1").members == ()
    assert h.coordinator.group("g").state is GroupState.COMPLETING_REBALANCE


def test_a_join_parked_twice_answers_the_first_with_rebalance_in_progress() -> None:
    h = Harness()
    member_id = h.new_member_id()
    first = h.join(member_id=member_id)
    second = h.join(member_id=member_id)
    assert h.answer(first).error is ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(3000)
    assert h.answer(second).error is ErrorCode.NONE


def test_a_group_emptied_by_the_rebalance_writes_an_empty_generation() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(1)
    h.advance(1000)
    h.leave(leader)
    # Nobody is left to wait for: the rebalance completes at once.
    group = h.coordinator.group("g")
    assert (group.state, group.generation_id, group.protocol_name) == (GroupState.EMPTY, generation + 1, None)
    key, value = h.log[h.coordinator.partition_for("g")][-1]
    stored = decode_group_metadata_value(value)
    assert (stored.generation, stored.protocol, stored.leader, stored.members) == (generation + 1, None, None, [])
    assert stored.current_state_timestamp == h.now


def test_requests_for_partitions_elsewhere_or_loading() -> None:
    h = Harness(load=False)
    partition = h.coordinator.partition_for("g")
    assert h.join_now().error is ErrorCode.NOT_COORDINATOR
    h.coordinator.begin_load(partition)
    assert h.join_now().error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    # SyncGroup asks to rejoin and Heartbeat answers blindly while the group is loading.
    assert h.sync_now("m", 1).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat("m", 1) is ErrorCode.NONE
    assert h.leave("m").error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    h.coordinator.load_partition(partition, [], h.now)
    assert h.join_now().error is ErrorCode.MEMBER_ID_REQUIRED


def test_effects_of_a_join_are_plain_values() -> None:
    h = Harness()
    effects = h.coordinator.join_group(
        "token", group_id="g", member_id="", group_instance_id=None, protocol_type="consumer",
        protocols=[("range", b"")], session_timeout_ms=10000, rebalance_timeout_ms=10000, client_id="c",
        client_host="/h", require_known_member_id=False, now_ms=h.now)
    assert effects == []
    effects = h.coordinator.tick(h.now + 3000)
    assert [type(effect).__name__ for effect in effects] == ["Respond"]
    assert effects[0].token == "token"
    with pytest.raises(ValueError):
        h.coordinator.join_group(None, group_id="g", member_id="", group_instance_id=None, protocol_type="consumer",
                                 protocols=[("range", b"")], session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                 client_id="c", client_host="/h", require_known_member_id=False, now_ms=h.now)
    assert not any(isinstance(effect, AppendRecords) for effect in effects)
