"""Kafka's caught-up rule for a follower as the leader tracks it."""

from __future__ import annotations

from gregor.replication.remote_replica import UNKNOWN_OFFSET, RemoteReplica

LAG = 1_000


def test_a_fetch_at_the_leader_end_catches_up_now():
    follower = RemoteReplica(2, None)
    assert follower.log_end_offset == UNKNOWN_OFFSET and not follower.is_caught_up(10, 0, LAG)
    follower.update_fetch_state(10, 10, 500)
    assert follower.log_end_offset == 10 and follower.last_caught_up_ms == 500
    assert follower.is_caught_up(12, 1_500, LAG) and not follower.is_caught_up(12, 1_501, LAG)
    assert follower.is_caught_up(10, 99_999, LAG)


def test_reaching_the_previous_leader_end_catches_up_as_of_the_previous_fetch():
    follower = RemoteReplica(2, None)
    follower.update_fetch_state(3, 10, 100)
    assert follower.last_caught_up_ms is None
    follower.update_fetch_state(10, 15, 400)
    assert follower.last_caught_up_ms == 100
    follower.update_fetch_state(12, 20, 900)
    assert follower.last_caught_up_ms == 100


def test_an_isr_member_starts_caught_up_when_its_leader_is_elected():
    follower = RemoteReplica(2, 7_000)
    assert follower.is_caught_up(50, 7_000 + LAG, LAG)
    assert not follower.is_caught_up(50, 7_001 + LAG, LAG)
