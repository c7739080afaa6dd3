"""acks=all completion: Kafka's checkEnoughReplicasReachOffset and the purgatory around it."""

from __future__ import annotations

from gregor.protocol.error_codes import ErrorCode
from gregor.replication.delayed_produce import DelayedProduces, check_replicated
from gregor.replication.effects import ProduceCompleted


def test_check_replicated():
    assert check_replicated(5, 4, 3, 2) is None
    assert check_replicated(5, 5, 3, 2) == ErrorCode.NONE
    assert check_replicated(5, 9, 1, 2) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_waiters_complete_when_the_high_watermark_passes_them():
    delayed = DelayedProduces()
    delayed.add(3, 0, 1_000, "a")
    delayed.add(6, 0, 1_000, "b")
    assert delayed.complete(2, 0, 2, 2, 10) == []
    assert delayed.complete(4, 0, 2, 2, 20) == [ProduceCompleted("a", ErrorCode.NONE)]
    assert delayed.complete(6, 0, 1, 2, 30) == [ProduceCompleted("b", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)]
    assert len(delayed) == 0


def test_waiters_time_out_or_fail_when_leadership_changes():
    delayed = DelayedProduces()
    delayed.add(3, 0, 1_000, "late")
    delayed.add(3, 0, 5_000, "moved")
    delayed.add(3, 1, 5_000, "gone")
    assert delayed.complete(0, 1, 3, 1, 1_000) == [ProduceCompleted("late", ErrorCode.NOT_LEADER_OR_FOLLOWER),
                                                    ProduceCompleted("moved", ErrorCode.NOT_LEADER_OR_FOLLOWER)]
    assert delayed.complete(0, 1, 3, 1, 5_000) == [ProduceCompleted("gone", ErrorCode.REQUEST_TIMED_OUT)]
    delayed.add(3, 2, 9_000, "demoted")
    assert delayed.complete(0, None, 3, 1, 6_000) == [ProduceCompleted("demoted", ErrorCode.NOT_LEADER_OR_FOLLOWER)]
