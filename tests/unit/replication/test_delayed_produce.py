"""acks=all completion: Kafka's checkEnoughReplicasReachOffset and the purgatory around it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_high_watermark_move_answers_only_the_waiters_it_passes():
    delayed = DelayedProduces()
    for offset in (9, 3, 7, 5, 1):
        delayed.add(offset, 0, 10_000 + offset, f"at {offset}")
    assert delayed.complete(5, 0, 2, 2, 0) == [ProduceCompleted("at 1", ErrorCode.NONE),
                                               ProduceCompleted("at 3", ErrorCode.NONE),
                                               ProduceCompleted("at 5", ErrorCode.NONE)]
    assert len(delayed) == 2 and delayed.next_deadline() == 10_007
    assert delayed.complete(5, 0, 2, 2, 10_007) == [ProduceCompleted("at 7", ErrorCode.REQUEST_TIMED_OUT)]
    assert delayed.next_deadline() == 10_009


class _Reference:
    """The purgatory's meaning, written the obvious way: every waiter checked on every call."""

    def __init__(self) -> None:
        self.waiting: list[tuple[int, int, int, str]] = []

    def add(self, required: int, epoch: int, deadline: int, token: str) -> None:
        self.waiting.append((required, epoch, deadline, token))

    def complete(self, high_watermark: int, epoch: int | None, isr: int, min_isr: int, now: int) -> list:
        done, keep = [], []
        for required, waiter_epoch, deadline, token in self.waiting:
            error = check_replicated(required, high_watermark, isr, min_isr)
            if epoch is None or waiter_epoch != epoch:
                error = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif error is None and now >= deadline:
                error = ErrorCode.REQUEST_TIMED_OUT
            (keep if error is None else done).append((required, waiter_epoch, deadline, token) if error is None
                                                     else ProduceCompleted(token, error))
        self.waiting = keep
        return done


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 30), st.integers(0, 2), st.integers(0, 100)),
    st.tuples(st.just("complete"), st.integers(0, 30), st.one_of(st.none(), st.integers(0, 2)), st.integers(1, 3),
              st.integers(0, 100))), max_size=60))
def test_the_heaps_answer_what_checking_every_waiter_answers(operations):
    delayed, reference = DelayedProduces(), _Reference()
    now = 0
    for index, operation in enumerate(operations):
        if operation[0] == "add":
            _, required, epoch, timeout = operation
            delayed.add(required, epoch, now + timeout, f"t{index}")
            reference.add(required, epoch, now + timeout, f"t{index}")
        else:
            _, high_watermark, epoch, isr, advance = operation
            now += advance
            answered = delayed.complete(high_watermark, epoch, isr, 2, now)
            expected = reference.complete(high_watermark, epoch, isr, 2, now)
            assert sorted(answered, key=repr) == sorted(expected, key=repr)
        assert len(delayed) == len(reference.waiting)
