"""The fetch purgatory: an event on a partition completes exactly the fetches parked under it,
once each; deadlines expire the rest; property test against the obvious scan of every fetch.
Progress completes only the fetches whose condition holds; a consumer's counts bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.error_codes import ErrorCode
from gregor.replication.delayed_fetch import DelayedFetches, EnoughBytes
from gregor.storage.errors import StorageError

from tests.unit.replication.helpers import Replica


def test_an_event_completes_the_fetches_parked_under_its_partition_only():
    purgatory: DelayedFetches[str] = DelayedFetches()
    purgatory.park(["a", "b"], 500, "ab")
    purgatory.park(["b"], 300, "b")
    purgatory.park(["c"], 100, "c")
    assert purgatory.complete("a") == ["ab"]
    assert purgatory.complete("a") == []
    assert purgatory.complete("b") == ["b"]  # "ab" was answered already: not twice
    assert len(purgatory) == 1 and purgatory.next_deadline() == 100
    assert purgatory.expire(99) == [] and purgatory.expire(100) == ["c"]
    assert len(purgatory) == 0 and purgatory.next_deadline() is None


def test_a_completed_fetch_leaves_no_deadline_behind():
    purgatory: DelayedFetches[int] = DelayedFetches()
    purgatory.park(["a"], 10, 1)
    purgatory.park(["a"], 20, 2)
    assert purgatory.complete("a") == [1, 2]
    assert purgatory.next_deadline() is None and purgatory.expire(1_000) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("park"), st.sets(st.sampled_from("abcd"), min_size=1), st.integers(0, 50)),
    st.tuples(st.just("event"), st.sampled_from("abcd")),
    st.tuples(st.just("tick"), st.integers(0, 30))), max_size=60))
def test_the_purgatory_answers_what_scanning_every_fetch_answers(operations):
    purgatory: DelayedFetches[int] = DelayedFetches()
    waiting: dict[int, tuple[set[str], int]] = {}
    now = 0
    for token, operation in enumerate(operations):
        if operation[0] == "park":
            purgatory.park(sorted(operation[1]), now + operation[2], token)
            waiting[token] = (operation[1], now + operation[2])
        elif operation[0] == "event":
            expected = sorted(t for t, (keys, _) in waiting.items() if operation[1] in keys)
            assert sorted(purgatory.complete(operation[1])) == expected
            for t in expected:
                del waiting[t]
        else:
            now += operation[1]
            expected = sorted(t for t, (_, deadline) in waiting.items() if deadline <= now)
            assert sorted(purgatory.expire(now)) == expected
            for t in expected:
                del waiting[t]
        assert len(purgatory) == len(waiting)
        assert purgatory.next_deadline() == (min(d for _, d in waiting.values()) if waiting else None)


def test_progress_completes_only_the_fetches_whose_condition_holds():
    purgatory: DelayedFetches[str] = DelayedFetches()
    enough = {"short": False}
    purgatory.park(["a"], 500, "follower")
    purgatory.park(["a", "b"], 500, "short", ready=lambda: enough["short"])
    purgatory.park(["a"], 500, "ready", ready=lambda: True)
    assert sorted(purgatory.check("a")) == ["follower", "ready"]
    assert purgatory.check("a") == [] and len(purgatory) == 1, "still short: still parked"
    enough["short"] = True
    assert purgatory.check("b") == ["short"] and len(purgatory) == 0
    purgatory.park(["a"], 100, "changed", ready=lambda: False)
    assert purgatory.complete("a") == ["changed"], "a change of the partition answers it, condition or not"


def test_a_consumer_fetch_is_due_once_enough_bytes_are_below_the_high_watermark(tmp_path):
    leader = Replica(tmp_path, 1, replicas=(1,))
    leader.apply(1, 0, (1,), 0)
    leader.produce(b"first", acks=1)
    one = leader.partition.read_records(0, 1 << 20).size
    enough = EnoughBytes(min_bytes=3 * one)
    enough.add(leader.partition, leader.partition.high_watermark, 1 << 20)
    assert not enough()
    leader.produce(b"second", acks=1)
    leader.produce(b"third", acks=1)
    assert not enough(), "two records' worth of bytes, three asked for"
    leader.produce(b"fourth", acks=1)
    assert enough()
    capped = EnoughBytes(min_bytes=2 * one)
    capped.add(leader.partition, 1, one)
    assert not capped(), "a partition counts up to its partition max bytes"


def test_a_consumer_fetch_is_due_at_once_when_its_leader_changes(tmp_path):
    leader = Replica(tmp_path, 1, replicas=(1, 2))
    leader.apply(1, 0, (1, 2), 0)
    enough = EnoughBytes(min_bytes=1 << 20)
    enough.add(leader.partition, 0, 1 << 20)
    assert not enough()
    leader.apply(2, 1, (1, 2), 1)
    assert enough(), "only a read can tell the consumer: NOT_LEADER_OR_FOLLOWER"


def test_a_consumer_fetch_whose_bytes_cannot_be_counted_is_due_for_its_read_to_report_why():
    class Unreadable:
        leader_epoch = 0

        def read_position(self, fetch_offset):
            return None

        def bytes_available(self, start, leader_epoch, isolation_level):
            raise StorageError(ErrorCode.KAFKA_STORAGE_ERROR, "the segment cannot be read")

    enough = EnoughBytes(min_bytes=1 << 20)
    enough.add(Unreadable(), 0, 1 << 20)
    assert enough()
