"""The leader side of a partition replica: high watermark, ISR proposals, acks=all, fencing."""

from __future__ import annotations

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import FetchRequest, OffsetForLeaderEpochRequest
from gregor.replication.effects import ProduceCompleted, ProposeIsr
from gregor.replication.isr_state import IsrProposal

from tests.unit.replication.helpers import Replica

LAG = 30_000


def leader_of_three(tmp_path, isr=(1, 2, 3), min_insync_replicas: int = 1, epoch: int = 0) -> Replica:
    leader = Replica(tmp_path, 1, replicas=(1, 2, 3), min_insync_replicas=min_insync_replicas)
    leader.apply(1, epoch, isr, 0)
    return leader


def fetch(leader: Replica, replica: int, offset: int, epoch: int = 0, last_fetched_epoch: int = -1):
    data, effects = leader.partition.fetch_for_follower(replica, FetchRequest.FetchPartition(
        partition=0, current_leader_epoch=epoch, fetch_offset=offset, last_fetched_epoch=last_fetched_epoch,
        partition_max_bytes=1 << 20), leader.now)
    leader.outbox += effects
    return data


def test_a_single_replica_moves_the_high_watermark_with_every_append(tmp_path):
    moved = []
    leader = Replica(tmp_path, 1, replicas=(1,))
    leader.partition._on_high_watermark = moved.append
    leader.apply(1, 0, (1,), 0)
    assert leader.produce(b"a") == [ProduceCompleted(b"a", ErrorCode.NONE)]
    leader.produce(b"b", acks=1)
    assert leader.partition.high_watermark == 2 and moved == [leader.partition, leader.partition]


def test_the_high_watermark_is_the_smallest_log_end_offset_of_the_isr(tmp_path):
    leader = leader_of_three(tmp_path)
    for value in (b"a", b"b", b"c"):
        leader.produce(value, acks=1)
    fetch(leader, 2, 3)
    assert leader.partition.high_watermark == 0
    data = fetch(leader, 3, 1)
    assert leader.partition.high_watermark == 1 == data.high_watermark
    assert data.records
    fetch(leader, 3, 3)
    assert leader.partition.high_watermark == 3


def held_back_by_three(tmp_path, resend_ms: int) -> Replica:
    """A leader whose high watermark (2) follower 3, caught up but outside the ISR, holds back
    from the log end (3); a pending proposal (resent at `resend_ms`) keeps 3 from joining."""
    leader = leader_of_three(tmp_path, isr=(1, 2))
    leader.partition.isr_state.pending = IsrProposal(99, (1, 2), resend_ms)
    leader.produce(b"a", acks=1)
    leader.produce(b"b", acks=1)
    fetch(leader, 3, 2)
    leader.produce(b"c", acks=1)
    fetch(leader, 2, 3)
    assert leader.partition.high_watermark == 2
    return leader


def test_a_caught_up_follower_outside_the_isr_holds_the_high_watermark_back(tmp_path):
    leader = held_back_by_three(tmp_path, 30_000)
    assert leader.proposed_isrs() == []
    leader.now += LAG + 1
    leader.outbox += leader.partition.tick(leader.now)
    assert leader.partition.high_watermark == 3


def test_a_follower_outside_the_isr_that_stopped_holding_the_high_watermark_leaves_it_due(tmp_path):
    """Asked after that moment has passed and before any tick, the partition is due at once: the
    drive contract (a tick before the next deadline does nothing) must hold whenever it is asked."""
    leader = held_back_by_three(tmp_path, 10**9)  # no resend due meanwhile
    assert leader.partition.next_deadline(leader.now) == LAG + 1
    leader.now += LAG + 5
    assert leader.partition.next_deadline(leader.now) == leader.now
    leader.outbox += leader.partition.tick(leader.now)
    assert leader.partition.high_watermark == 3
    assert leader.partition.next_deadline(leader.now) == 10**9


def test_acks_all_is_answered_when_the_high_watermark_passes_the_batch(tmp_path):
    leader = leader_of_three(tmp_path, isr=(1, 2), min_insync_replicas=2)
    assert leader.produce(b"a") == []
    fetch(leader, 2, 0)
    assert leader.acknowledged() == {}
    fetch(leader, 2, 1)
    assert leader.acknowledged() == {b"a": ErrorCode.NONE}


def test_acks_all_is_refused_before_the_append_below_min_insync_replicas(tmp_path):
    leader = leader_of_three(tmp_path, isr=(1,), min_insync_replicas=2)
    with pytest.raises(KafkaError) as refused:
        leader.produce(b"a")
    assert refused.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert leader.log.log_end_offset == 0
    leader.produce(b"b", acks=1)
    assert leader.log.log_end_offset == 1


def test_a_shrink_below_min_insync_replicas_answers_not_enough_replicas_after_append(tmp_path):
    leader = leader_of_three(tmp_path, isr=(1, 2), min_insync_replicas=2)
    leader.produce(b"a")
    leader.now += LAG + 1
    leader.outbox += leader.partition.tick(leader.now)
    proposal = leader.outbox[-1]
    assert isinstance(proposal, ProposeIsr) and proposal.isr == (1,) and proposal.partition_epoch == 0
    assert leader.partition.isr == [1, 2] and leader.partition.high_watermark == 0
    leader.outbox += leader.partition.on_alter_partition_response(proposal.request_id, ErrorCode.NONE, 0, 1, (1,),
                                                                  leader.now)
    assert leader.partition.isr == [1] and leader.partition.partition_epoch == 1
    assert leader.acknowledged() == {b"a": ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND}


def test_acks_all_times_out_and_fails_when_leadership_moves(tmp_path):
    leader = leader_of_three(tmp_path, isr=(1, 2))
    leader.produce(b"late", timeout_ms=500)
    leader.produce(b"moved")
    leader.now += 500
    leader.outbox += leader.partition.tick(leader.now)
    assert leader.acknowledged() == {b"late": ErrorCode.REQUEST_TIMED_OUT}
    leader.apply(2, 1, (1, 2), 1)
    assert leader.acknowledged()[b"moved"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(KafkaError) as refused:
        leader.produce(b"x")
    assert refused.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_reaching_the_high_watermark_and_the_epoch_start_is_proposed_into_the_isr(tmp_path):
    leader = leader_of_three(tmp_path, isr=(1, 2), epoch=3)
    assert leader.partition.leader_epoch_start_offset == 0
    leader.produce(b"a", acks=1)
    fetch(leader, 2, 1, epoch=3)
    assert leader.partition.high_watermark == 1
    fetch(leader, 3, 0, epoch=3)
    assert leader.proposed_isrs() == []
    fetch(leader, 3, 1, epoch=3)
    assert leader.proposed_isrs() == [(1, 2, 3)]
    fetch(leader, 3, 1, epoch=3)
    assert leader.proposed_isrs() == [(1, 2, 3)]
    proposal = leader.outbox[-1]
    leader.outbox += leader.partition.on_alter_partition_response(proposal.request_id, ErrorCode.INELIGIBLE_REPLICA,
                                                                  -1, -1, (), leader.now)
    assert leader.partition.isr_state.pending is None and leader.partition.isr == [1, 2]
    fetch(leader, 3, 1, epoch=3)  # refused (the follower is fenced, say): not again at once
    assert leader.proposed_isrs() == [(1, 2, 3)]
    leader.now += leader.partition.config.replica_fetch_backoff_ms
    fetch(leader, 3, 1, epoch=3)
    assert leader.proposed_isrs() == [(1, 2, 3), (1, 2, 3)]


@pytest.mark.parametrize("error", [ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.REQUEST_TIMED_OUT])
def test_an_answer_that_does_not_rule_the_change_out_keeps_the_expansion_counting(tmp_path, error):
    """A controller may have applied a proposal whose answer is an error (a resend after a lost
    answer meets INVALID_UPDATE_VERSION; a newer controller, NOT_LEADER_OR_FOLLOWER): the newcomer
    keeps holding the high watermark back until the metadata says what was committed. Dropping it
    let a zombie leader commit, with the old ISR, records the newly elected leader lacked (found by
    the replication simulation, seed 1023)."""
    leader = leader_of_three(tmp_path, isr=(1, 2))
    fetch(leader, 3, 0)
    [proposal] = [e for e in leader.outbox if isinstance(e, ProposeIsr)]
    leader.produce(b"a", acks=1)
    fetch(leader, 2, 1)
    leader.outbox += leader.partition.on_alter_partition_response(proposal.request_id, error, -1, -1, (), leader.now)
    assert leader.partition.isr_state.pending is not None
    fetch(leader, 2, 1)
    assert leader.partition.high_watermark == 0  # replica 3, maybe in the ISR now, lacks offset 0
    leader.now += 1_000
    leader.outbox += leader.partition.tick(leader.now)
    assert leader.proposed_isrs()[-1] == (1, 2, 3)  # sent again after replica.fetch.backoff.ms


def test_a_pending_expansion_counts_the_newcomer_for_the_high_watermark(tmp_path):
    leader = leader_of_three(tmp_path, isr=(1, 2))
    fetch(leader, 3, 0)
    assert leader.proposed_isrs() == [(1, 2, 3)]
    leader.produce(b"a", acks=1)
    fetch(leader, 2, 1)
    leader.now += LAG + 1
    leader.outbox += leader.partition.tick(leader.now)
    assert leader.partition.high_watermark == 0


def test_an_unanswered_proposal_is_sent_again(tmp_path):
    leader = leader_of_three(tmp_path, isr=(1, 2))
    fetch(leader, 3, 0)
    leader.now += leader.config.replica_socket_timeout_ms
    leader.outbox += leader.partition.tick(leader.now)
    first, second = [effect for effect in leader.outbox if isinstance(effect, ProposeIsr)]
    assert first.isr == second.isr and first.request_id != second.request_id


@pytest.mark.parametrize(("epoch", "replica", "code"), [
    (0, 2, ErrorCode.FENCED_LEADER_EPOCH), (2, 2, ErrorCode.UNKNOWN_LEADER_EPOCH),
    (1, 9, ErrorCode.NOT_LEADER_OR_FOLLOWER)])
def test_fetches_with_a_wrong_epoch_or_from_a_stranger_are_refused(tmp_path, epoch, replica, code):
    leader = leader_of_three(tmp_path, epoch=1)
    leader.produce(b"a", acks=1)
    data = fetch(leader, replica, 0, epoch=epoch)
    assert data.error_code == code and not data.records
    assert leader.partition.remote[2].log_end_offset == -1


def test_a_follower_is_not_a_leader(tmp_path):
    follower = Replica(tmp_path, 2, replicas=(1, 2, 3))
    follower.apply(1, 4, (1, 2, 3), 0)
    assert fetch(follower, 3, 0, epoch=4).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    answer = follower.partition.offsets_for_leader_epoch(OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
        partition=0, current_leader_epoch=4, leader_epoch=4))
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_epoch_questions_are_answered_from_the_leader_epoch_cache(tmp_path):
    leader = leader_of_three(tmp_path, epoch=0)
    leader.produce(b"a", acks=1)
    leader.produce(b"b", acks=1)
    leader.apply(1, 3, (1, 2, 3), 1)
    leader.produce(b"c", acks=1)

    def ask(epoch: int, current: int = 3):
        return leader.partition.offsets_for_leader_epoch(OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
            partition=0, current_leader_epoch=current, leader_epoch=epoch))

    assert (ask(0).leader_epoch, ask(0).end_offset) == (0, 2)
    assert (ask(2).leader_epoch, ask(2).end_offset) == (0, 2)
    assert (ask(3).leader_epoch, ask(3).end_offset) == (3, 3)
    assert ask(0, current=2).error_code == ErrorCode.FENCED_LEADER_EPOCH
    diverging = fetch(leader, 2, 3, epoch=3, last_fetched_epoch=1)
    assert (diverging.diverging_epoch.epoch, diverging.diverging_epoch.end_offset) == (0, 2)
    assert not diverging.records and leader.partition.remote[2].log_end_offset == -1
    assert fetch(leader, 2, 2, epoch=3, last_fetched_epoch=0).records


def test_a_fetch_outside_the_log_is_out_of_range(tmp_path):
    leader = leader_of_three(tmp_path)
    assert fetch(leader, 2, 5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_stale_partition_states_are_ignored(tmp_path):
    leader = leader_of_three(tmp_path, epoch=2)
    leader.partition.isr_state.commit((1, 2, 3), 5)
    assert leader.apply(2, 1, (1, 2), 9) == []
    assert leader.apply(1, 2, (1, 2), 4) == []
    assert leader.partition.is_leader and leader.partition.isr == [1, 2, 3]
    leader.apply(1, 2, (1, 2), 6)
    assert leader.partition.is_leader and leader.partition.isr == [1, 2]


def test_a_leader_that_stops_hosting_the_partition_answers_its_waiting_acks_all_produces(tmp_path):
    leader = leader_of_three(tmp_path)
    assert leader.produce(b"waits") == []  # followers 2 and 3 have not fetched it yet
    assert leader.partition.stop(leader.now) == [ProduceCompleted(b"waits", ErrorCode.NOT_LEADER_OR_FOLLOWER)]
