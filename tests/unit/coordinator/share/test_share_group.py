"""Share group membership: epochs, fencing, leaving, session expiry, the simple assignor."""

from __future__ import annotations

import uuid

from gregor.coordinator.share import simple_assignor
from gregor.coordinator.share.share_group import ShareGroupConfig, ShareGroupCoordinator
from gregor.coordinator.share.share_session import ShareSessions
from gregor.protocol.error_codes import ErrorCode

COUNTS = {"t": 2}


def coordinator(**config) -> ShareGroupCoordinator:
    return ShareGroupCoordinator(ShareGroupConfig(**config))


def join(c: ShareGroupCoordinator, member: str, now: int = 0, topics=("t",)):
    return c.heartbeat("g", member, 0, None, list(topics), "client", "host", COUNTS, now)


def test_simple_assignor_spreads_partitions_and_shares_them_when_members_outnumber_them():
    three = simple_assignor.assign({m: frozenset({"t"}) for m in "abc"}, {"t": 2})
    assert three == {"a": {"t": [0]}, "b": {"t": [1]}, "c": {"t": [0]}}
    one = simple_assignor.assign({"a": frozenset({"t"})}, {"t": 3})
    assert one == {"a": {"t": [0, 1, 2]}}
    mixed = simple_assignor.assign({"a": frozenset({"t"}), "b": frozenset({"u"})}, {"t": 1})
    assert mixed == {"a": {"t": [0]}, "b": {}}


def test_joining_members_get_epochs_and_assignments_and_the_group_rebalances_at_once():
    c = coordinator()
    first = join(c, "a")
    assert first.error == ErrorCode.NONE and first.member_epoch == 1 and first.assignment == {"t": [0, 1]}
    second = join(c, "b")
    assert second.member_epoch == 2 and second.assignment == {"t": [1]}
    moved = c.heartbeat("g", "a", 1, None, None, "client", "host", COUNTS, 10)
    assert moved.member_epoch == 2 and moved.assignment == {"t": [0]}
    steady = c.heartbeat("g", "a", 2, None, None, "client", "host", COUNTS, 20)
    assert steady.member_epoch == 2 and steady.assignment is None


def test_a_stale_epoch_is_fenced_and_an_unknown_member_must_rejoin():
    c = coordinator()
    join(c, "a")
    join(c, "b")
    assert c.heartbeat("g", "b", 1, None, None, "c", "h", COUNTS, 5).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert c.heartbeat("g", "zed", 3, None, None, "c", "h", COUNTS, 5).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.heartbeat("g", "x", 0, None, None, "c", "h", COUNTS, 5).error == ErrorCode.INVALID_REQUEST


def test_leaving_and_expiring_members_give_their_partitions_back():
    c = coordinator(session_timeout_ms=100)
    join(c, "a", now=0)
    join(c, "b", now=50)
    assert c.heartbeat("g", "b", -1, None, None, "c", "h", COUNTS, 60).member_epoch == -1
    assert set(c.groups["g"].members) == {"a"} and c.groups["g"].members["a"].assignment == {"t": [0, 1]}
    assert c.next_deadline() == 100
    assert c.expire(99) == []
    assert c.expire(100) == [("g", "a")]
    assert c.groups["g"].state == "Empty"


def test_the_group_size_is_bounded_and_new_partitions_are_assigned():
    c = coordinator(max_size=1)
    join(c, "a")
    assert join(c, "b").error == ErrorCode.GROUP_MAX_SIZE_REACHED
    grown = c.heartbeat("g", "a", 1, None, None, "c", "h", {"t": 3}, 5)
    assert grown.member_epoch == 2 and grown.assignment == {"t": [0, 1, 2]}


def test_share_sessions_check_epochs_and_track_partitions():
    sessions = ShareSessions()
    assert sessions.update("g", "m", 1, [], [])[0] == ErrorCode.SHARE_SESSION_NOT_FOUND
    error, session = sessions.update("g", "m", 0, [("t", 0)], [])
    assert error == ErrorCode.NONE and session is not None and list(session.partitions) == [("t", 0)]
    assert sessions.update("g", "m", 2, [], [])[0] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    error, session = sessions.update("g", "m", 1, [("t", 1)], [("t", 0)])
    assert error == ErrorCode.NONE and list(session.partitions) == [("t", 1)] and session.next_epoch == 2
    error, closed = sessions.update("g", "m", -1, [], [])
    assert error == ErrorCode.NONE and closed is session and sessions.get("g", "m") is None


def test_a_share_session_closes_with_the_connection_it_last_used():
    sessions = ShareSessions()
    sessions.update("g", "a", 0, [("t", 0)], [], connection_id=7)
    sessions.update("g", "b", 0, [("t", 0)], [], connection_id=7)
    sessions.update("g", "c", 0, [("t", 0)], [], connection_id=8)
    sessions.update("g", "b", 1, [], [], connection_id=9)  # b moved to a new connection
    assert [s.member_id for s in sessions.close_connection(7)] == ["a"]
    assert sessions.get("g", "a") is None and sessions.get("g", "b") is not None
    assert [s.member_id for s in sessions.close_connection(9)] == ["b"]
    assert sessions.close_connection(9) == [] and sessions.get("g", "c") is not None
    sessions.update("g", "c", -1, [], [], connection_id=8)  # closed by the client: nothing left on 8
    assert sessions.close_connection(8) == []


def test_a_topic_created_again_under_its_name_is_assigned_afresh():
    c = coordinator()
    old, new = uuid.uuid4(), uuid.uuid4()
    first = c.heartbeat("g", "a", 0, None, ["t"], "client", "host", COUNTS, 0, {"t": old})
    steady = c.heartbeat("g", "a", first.member_epoch, None, None, "client", "host", COUNTS, 10, {"t": old})
    assert steady.assignment is None
    recreated = c.heartbeat("g", "a", first.member_epoch, None, None, "client", "host", COUNTS, 20, {"t": new})
    assert recreated.member_epoch == first.member_epoch + 1 and recreated.assignment == {"t": [0, 1]}
