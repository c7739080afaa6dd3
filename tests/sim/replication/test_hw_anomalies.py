"""The two high-watermark anomalies of the seed notes (KIP-101), scripted step by step on two
replicas over real logs, with every message delivered (or lost) by hand.

1. Lost data: the follower has the leader's last record but not yet the high watermark that
   acknowledged it; it restarts and truncates to its own high watermark, then the leader dies and
   the follower leads. An acks=all record is gone from every replica.
2. Divergent logs: both replicas crash; the follower loses its unflushed copy of the leader's last
   record, comes back first, leads and takes a new record at that offset. The old leader comes
   back and keeps its own record there, because its high watermark says it is committed.

With HIGH_WATERMARK truncation (Kafka before leader epochs) both happen; with leader epochs
(OffsetsForLeaderEpoch or the diverging epoch of Fetch) neither does.
"""

from __future__ import annotations

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.replication.config import TruncationMode

from tests.unit.replication.helpers import Replica, catch_up, round_trip

A, B = 1, 2
EPOCH_MODES = [TruncationMode.DIVERGING_EPOCH, TruncationMode.OFFSETS_FOR_LEADER_EPOCH]


def lost_acknowledged_record(tmp_path, mode: TruncationMode) -> tuple[dict, Replica, Replica]:
    a, b = Replica(tmp_path, A, mode), Replica(tmp_path, B, mode)
    a.apply(A, 0, (A, B), 0)
    b.apply(A, 0, (A, B), 0)
    a.produce(b"m0")
    round_trip(b, a)
    round_trip(b, a)
    assert a.acknowledged() == {b"m0": ErrorCode.NONE} and b.partition.high_watermark == 1
    a.produce(b"m1")
    round_trip(b, a)
    assert b.log.log_end_offset == 2 and b.partition.high_watermark == 1
    round_trip(b, a, deliver=False)
    acks = a.acknowledged()
    assert a.partition.high_watermark == 2 and acks[b"m1"] == ErrorCode.NONE
    a.checkpoint_high_watermark()
    b.checkpoint_high_watermark()
    b.crash()
    b.start()
    b.apply(A, 0, (A, B), 0)
    a.crash()
    b.apply(B, 1, (B,), 1)
    a.start()
    a.apply(B, 1, (B,), 1)
    catch_up(a, b)
    return acks, a, b


def test_high_watermark_truncation_loses_an_acknowledged_record(tmp_path):
    acks, a, b = lost_acknowledged_record(tmp_path, TruncationMode.HIGH_WATERMARK)
    assert acks[b"m1"] == ErrorCode.NONE
    assert a.values() == b.values() == [(0, b"m0")]


@pytest.mark.parametrize("mode", EPOCH_MODES, ids=lambda mode: mode.value)
def test_leader_epochs_keep_the_acknowledged_record(tmp_path, mode):
    acks, a, b = lost_acknowledged_record(tmp_path, mode)
    assert acks[b"m1"] == ErrorCode.NONE
    assert a.values() == b.values() == [(0, b"m0"), (1, b"m1")]


def diverged_after_power_loss(tmp_path, mode: TruncationMode) -> tuple[Replica, Replica]:
    a, b = Replica(tmp_path, A, mode), Replica(tmp_path, B, mode)
    a.apply(A, 0, (A, B), 0)
    b.apply(A, 0, (A, B), 0)
    a.produce(b"m0")
    catch_up(b, a)
    round_trip(b, a)
    b.log.flush(b.now)
    a.produce(b"m1")
    round_trip(b, a)
    round_trip(b, a, deliver=False)
    assert a.partition.high_watermark == 2 and b.log.log_end_offset == 2
    a.log.flush(a.now)
    a.checkpoint_high_watermark()
    b.checkpoint_high_watermark()
    a.crash()
    b.crash(lose_unflushed=True)
    b.start()
    assert b.log.log_end_offset == 1
    b.apply(B, 1, (B,), 1)
    b.produce(b"m2", acks=1)
    a.start()
    a.apply(B, 1, (B,), 1)
    catch_up(a, b)
    return a, b


def test_high_watermark_truncation_leaves_replicas_diverged(tmp_path):
    a, b = diverged_after_power_loss(tmp_path, TruncationMode.HIGH_WATERMARK)
    assert a.values() == [(0, b"m0"), (1, b"m1")]
    assert b.values() == [(0, b"m0"), (1, b"m2")]
    assert b.proposed_isrs() == [(B, A)]


@pytest.mark.parametrize("mode", EPOCH_MODES, ids=lambda mode: mode.value)
def test_leader_epochs_truncate_the_diverged_record(tmp_path, mode):
    a, b = diverged_after_power_loss(tmp_path, mode)
    assert a.values() == b.values() == [(0, b"m0"), (1, b"m2")]
    assert b.proposed_isrs() == [(B, A)]
