"""The follower side: truncation decisions, fetching, request matching, errors, unclean elections."""

from __future__ import annotations

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchResponse, OffsetForLeaderEpochResponse
from gregor.replication.config import TruncationMode
from gregor.replication.effects import SendFetch, SendOffsetsForLeaderEpoch
from gregor.replication.fetcher import FetchState
from gregor.storage.leader_epoch_cache import EpochEntry

from tests.unit.replication.helpers import Replica, catch_up, round_trip
from tests.unit.storage.helpers import batch

EPOCH_MODES = [TruncationMode.DIVERGING_EPOCH, TruncationMode.OFFSETS_FOR_LEADER_EPOCH]


def follower_with_epochs(tmp_path, mode=TruncationMode.DIVERGING_EPOCH) -> Replica:
    """Offsets 0-3 in epoch 1, 4-5 in epoch 3, 6-7 in epoch 5, one record a batch; high watermark 2."""
    replica = Replica(tmp_path, 2, mode)
    for epoch in (1, 1, 1, 1, 3, 3, 5, 5):
        replica.log.append_as_leader(batch(1), epoch, 0)
    replica.log.high_watermark = 2
    replica.apply(1, 6, (1, 2), 0)
    return replica


@pytest.mark.parametrize(("leader_epoch", "leader_end", "end", "done"), [
    (5, 7, 7, True),      # same epoch, the leader's copy ends earlier
    (5, 9, 8, True),      # same epoch, ours ends earlier: nothing to cut
    (4, 5, 6, False),     # the leader's epoch 4 is unknown here: cut to the end of our epoch 3, ask again
    (3, 5, 5, True),      # the leader's epoch 3 ends at 5, ours at 6
    (0, 0, 0, True),      # an epoch below all of ours: the leader's log starts later
    (-1, 3, 3, True),     # no epoch from the leader: its end offset
    (-1, -1, 2, True),    # nothing known: back to the high watermark
])
def test_truncation_follows_kafka(tmp_path, leader_epoch, leader_end, end, done):
    replica = follower_with_epochs(tmp_path)
    assert replica.partition.fetcher.truncate_to_leader_epoch_end(leader_epoch, leader_end) is done
    assert replica.log.log_end_offset == end


def test_offsets_for_leader_epoch_mode_asks_before_fetching(tmp_path):
    replica = follower_with_epochs(tmp_path, TruncationMode.OFFSETS_FOR_LEADER_EPOCH)
    (request,) = replica.outbox
    assert isinstance(request, SendOffsetsForLeaderEpoch) and request.leader_id == 1
    assert (request.partition.leader_epoch, request.partition.current_leader_epoch) == (5, 6)
    answer = OffsetForLeaderEpochResponse.EpochEndOffset(partition=0, leader_epoch=4, end_offset=5)
    (again,) = replica.partition.on_offsets_for_leader_epoch_response(request.request_id, answer, 0)
    assert replica.log.log_end_offset == 6 and isinstance(again, SendOffsetsForLeaderEpoch)
    assert again.partition.leader_epoch == 3
    answer = OffsetForLeaderEpochResponse.EpochEndOffset(partition=0, leader_epoch=3, end_offset=5)
    (fetch,) = replica.partition.on_offsets_for_leader_epoch_response(again.request_id, answer, 0)
    assert replica.log.log_end_offset == 5 and isinstance(fetch, SendFetch)
    assert (fetch.partition.fetch_offset, fetch.partition.last_fetched_epoch) == (5, -1)
    assert replica.log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(3, 4)]


def test_diverging_epoch_mode_fetches_at_once_with_its_last_epoch(tmp_path):
    replica = follower_with_epochs(tmp_path)
    (request,) = replica.outbox
    assert isinstance(request, SendFetch)
    assert (request.partition.fetch_offset, request.partition.last_fetched_epoch) == (8, 5)
    diverging = FetchResponse.PartitionData(high_watermark=4, diverging_epoch=FetchResponse.EpochEndOffset(
        epoch=3, end_offset=5))
    (fetch,) = replica.partition.on_fetch_response(request.request_id, diverging, 0)
    assert replica.log.log_end_offset == 5 and (fetch.partition.fetch_offset, fetch.partition.last_fetched_epoch) == (5, 3)


def test_answers_to_other_requests_are_ignored_and_overdue_requests_resent(tmp_path):
    replica = follower_with_epochs(tmp_path)
    (request,) = replica.outbox
    stale = FetchResponse.PartitionData(high_watermark=0, diverging_epoch=FetchResponse.EpochEndOffset(
        epoch=0, end_offset=0))
    assert replica.partition.on_fetch_response(request.request_id + 7, stale, 0) == []
    assert replica.log.log_end_offset == 8
    assert replica.partition.tick(replica.config.replica_socket_timeout_ms - 1) == []
    (resent,) = replica.partition.tick(replica.config.replica_socket_timeout_ms)
    assert resent.request_id != request.request_id and resent.partition.fetch_offset == 8
    assert replica.partition.on_fetch_response(request.request_id, stale, 0) == []


def test_a_fenced_follower_waits_for_the_next_partition_state(tmp_path):
    replica = follower_with_epochs(tmp_path)
    (request,) = replica.outbox
    fenced = FetchResponse.PartitionData(error_code=ErrorCode.FENCED_LEADER_EPOCH)
    assert replica.partition.on_fetch_response(request.request_id, fenced, 0) == []
    assert replica.partition.fetcher.state is FetchState.FENCED
    assert replica.partition.tick(60_000) == []
    (request,) = replica.apply(3, 7, (2, 3), 1)
    assert request.leader_id == 3 and request.partition.current_leader_epoch == 7


def test_other_errors_back_off(tmp_path):
    replica = follower_with_epochs(tmp_path)
    (request,) = replica.outbox
    error = FetchResponse.PartitionData(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert replica.partition.on_fetch_response(request.request_id, error, 0) == []
    assert replica.partition.tick(replica.config.replica_fetch_backoff_ms - 1) == []
    assert len(replica.partition.tick(replica.config.replica_fetch_backoff_ms)) == 1


def test_out_of_range_below_the_leader_start_restarts_the_log_there(tmp_path):
    replica = follower_with_epochs(tmp_path)
    (request,) = replica.outbox
    out = FetchResponse.PartitionData(error_code=ErrorCode.OFFSET_OUT_OF_RANGE, log_start_offset=20)
    (fetch,) = replica.partition.on_fetch_response(request.request_id, out, 0)
    assert (replica.log.log_start_offset, replica.log.log_end_offset) == (20, 20)
    assert fetch.partition.fetch_offset == 20 and fetch.partition.last_fetched_epoch == -1


def test_out_of_range_beyond_the_leader_end_truncates_to_it(tmp_path):
    replica = follower_with_epochs(tmp_path, TruncationMode.HIGH_WATERMARK)
    assert replica.log.log_end_offset == 2
    (request,) = replica.outbox
    out = FetchResponse.PartitionData(error_code=ErrorCode.OFFSET_OUT_OF_RANGE, log_start_offset=0)
    (ask,) = replica.partition.on_fetch_response(request.request_id, out, 0)
    assert isinstance(ask, SendOffsetsForLeaderEpoch) and ask.partition.leader_epoch == 6
    answer = OffsetForLeaderEpochResponse.EpochEndOffset(partition=0, leader_epoch=6, end_offset=1)
    (fetch,) = replica.partition.on_offsets_for_leader_epoch_response(ask.request_id, answer, 0)
    assert replica.log.log_end_offset == 1 and fetch.partition.fetch_offset == 1


def test_the_follower_high_watermark_is_the_smaller_of_its_log_end_and_the_leaders(tmp_path):
    leader, follower = Replica(tmp_path, 1), Replica(tmp_path, 2)
    leader.apply(1, 0, (1, 2), 0)
    follower.apply(1, 0, (1, 2), 0)
    for value in (b"a", b"b", b"c"):
        leader.produce(value, acks=1)
    round_trip(follower, leader)
    assert follower.log.log_end_offset == 3 and follower.partition.high_watermark == 0
    round_trip(follower, leader)
    assert leader.partition.high_watermark == 3 and follower.partition.high_watermark == 3


@pytest.mark.parametrize("mode", EPOCH_MODES, ids=lambda mode: mode.value)
def test_after_an_unclean_election_the_old_leader_truncates_to_the_new_leaders_log(tmp_path, mode):
    old, new = Replica(tmp_path, 1, mode), Replica(tmp_path, 2, mode)
    old.apply(1, 0, (1, 2), 0)
    new.apply(1, 0, (1, 2), 0)
    old.produce(b"a", acks=1)
    catch_up(new, old)
    new.apply(1, 0, (1,), 1)
    old.apply(1, 0, (1,), 1)
    old.produce(b"b", acks=1)
    old.produce(b"c", acks=1)
    old.crash()
    new.apply(2, 1, (2,), 2)
    new.produce(b"d", acks=1)
    old.start()
    old.apply(2, 1, (2,), 2)
    catch_up(old, new)
    assert old.values() == new.values() == [(0, b"a"), (1, b"d")]
    assert new.proposed_isrs() == [(2, 1)]


def test_a_follower_deletes_what_the_leader_deleted_up_to_its_high_watermark(tmp_path):
    replica = follower_with_epochs(tmp_path)
    (request,) = replica.outbox
    answer = FetchResponse.PartitionData(high_watermark=6, log_start_offset=7)
    (again,) = replica.partition.on_fetch_response(request.request_id, answer, 0)
    assert (replica.log.high_watermark, replica.log.log_start_offset) == (6, 6)
    answer = FetchResponse.PartitionData(high_watermark=8, log_start_offset=7)
    replica.partition.on_fetch_response(again.request_id, answer, 0)
    assert (replica.log.high_watermark, replica.log.log_start_offset) == (8, 7)
