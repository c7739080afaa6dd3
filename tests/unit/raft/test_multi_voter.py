"""The raft client's rules one message at a time: votes, fetch validation, the commit rule, check quorum."""

from __future__ import annotations

import random

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.begin_quorum_epoch import BeginQuorumEpochRequest
from gregor.protocol.messages.end_quorum_epoch import EndQuorumEpochRequest
from gregor.protocol.messages.fetch import FetchResponse
from gregor.protocol.messages.vote import VoteRequest
from gregor.raft import messages
from gregor.raft.client import RaftClient, RaftConfig
from gregor.raft.effects import HighWatermarkChanged, Respond, Send, StateChanged
from gregor.raft.memory_log import MemoryLog
from gregor.raft.quorum_state import Role
from gregor.raft.quorum_state_file import MemoryQuorumStateStore
from gregor.raft.replicated_log import Snapshot, SnapshotId
from gregor.records.record import BatchBuilder

CONFIG = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, request_timeout_ms=500)


def batch(value: bytes) -> bytes:
    builder = BatchBuilder()
    builder.append(0, None, value)
    return builder.build()


def voter(node_id: int = 1, log: MemoryLog | None = None, store: MemoryQuorumStateStore | None = None) -> RaftClient:
    client = RaftClient(node_id, [1, 2, 3], log or MemoryLog(), store or MemoryQuorumStateStore(), "c", CONFIG,
                        random.Random(0))
    client.start(0)
    return client


def response(effects: list):
    [respond] = [e for e in effects if isinstance(e, Respond)]
    return respond.response


def vote(client: RaftClient, candidate: int, epoch: int, last_epoch: int, end_offset: int) -> bool:
    request = messages.vote_request("c", client.node_id, epoch, candidate, last_epoch, end_offset)
    return response(client.handle_request(candidate, 1, request, 10)).topics[0].partitions[0].vote_granted


def fetch(client: RaftClient, replica: int, epoch: int, offset: int, last_epoch: int, now: int = 10):
    request = messages.fetch_request("c", replica, epoch, offset, last_epoch, 0, 0, 1 << 20)
    return response(client.handle_request(replica, 7, request, now)).responses[0].partitions[0]


def elect(client: RaftClient, now: int = 5000) -> list:
    """Let the election timeout pass and grant the candidate one vote: a leader of three."""
    effects = client.poll(now)
    votes = [e for e in effects if isinstance(e, Send) and isinstance(e.request, VoteRequest)]
    assert sorted(e.destination for e in votes) == [2, 3] and client.quorum.role == Role.CANDIDATE
    granted = messages.vote_response(ErrorCode.NONE, -1, client.leader_epoch, True)
    return client.handle_response(2, votes[0].correlation_id, granted, now)


def test_a_vote_is_granted_once_per_epoch_to_an_up_to_date_candidate_and_persisted():
    log = MemoryLog()
    log.append_as_leader(batch(b"a"), 2, 0)
    store = MemoryQuorumStateStore()
    client = voter(log=log, store=store)
    assert not vote(client, 2, 3, 1, 5)
    assert not vote(client, 2, 4, 2, 0)
    assert vote(client, 3, 5, 2, 1)
    assert (store.read().epoch, store.read().voted_id) == (5, 3)
    assert vote(client, 3, 5, 2, 1)
    assert not vote(client, 2, 5, 9, 9)
    assert not vote(client, 2, 4, 9, 9)
    again = voter(log=log, store=store)
    assert again.quorum.role == Role.VOTED and not vote(again, 2, 5, 9, 9)


def test_election_then_leader_change_batch_then_begin_quorum_epoch():
    client = voter()
    assert [e.state.role for e in client.poll(100)] == [Role.UNATTACHED]
    effects = elect(client)
    assert client.is_leader and client.leader_epoch == 1 and client.end_offset == 1
    begins = [e for e in effects if isinstance(e, Send) and isinstance(e.request, BeginQuorumEpochRequest)]
    assert sorted(e.destination for e in begins) == [2, 3]
    assert [e.state.role for e in effects if isinstance(e, StateChanged)] == [Role.LEADER]


def test_the_leader_validates_fetches_by_epoch_and_offset():
    log = MemoryLog()
    log.append_as_leader(batch(b"a"), 1, 0)
    client = voter(log=log)
    elect(client)
    epoch = client.leader_epoch
    assert fetch(client, 2, epoch - 1, 0, 0).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert fetch(client, 2, epoch + 1, 0, 0).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    diverging = fetch(client, 2, epoch, 3, 1).diverging_epoch
    assert (diverging.epoch, diverging.end_offset) == (1, 1)
    answer = fetch(client, 2, epoch, 1, 1)
    assert answer.error_code == ErrorCode.NONE and answer.records
    follower = voter(2)
    assert fetch(follower, 3, 0, 0, 0).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_the_high_watermark_waits_for_a_majority_in_the_current_epoch():
    log = MemoryLog()
    log.append_as_leader(batch(b"old"), 1, 0)
    client = voter(log=log)
    elect(client)
    epoch = client.leader_epoch
    fetch(client, 2, epoch, 1, 1)
    assert client.high_watermark == 0
    request = messages.fetch_request("c", 2, epoch, 2, epoch, 0, 0, 1 << 20)
    effects = client.handle_request(2, 8, request, 20)
    assert client.high_watermark == 2 and HighWatermarkChanged(2) in effects
    client.append([b"new"], 30)
    assert client.high_watermark == 2
    fetch(client, 3, epoch, 3, epoch)
    assert client.high_watermark == 3


def test_a_fetch_at_the_end_waits_until_records_arrive():
    client = voter()
    elect(client)
    epoch = client.leader_epoch
    request = messages.fetch_request("c", 2, epoch, 1, epoch, 0, 500, 1 << 20)
    assert not [e for e in client.handle_request(2, 9, request, 10) if isinstance(e, Respond)]
    client.append([b"x"], 20)
    parked = response(client.poll(20))
    assert parked.responses[0].partitions[0].records
    client.handle_request(3, 10, messages.fetch_request("c", 3, epoch, 2, epoch, 0, 500, 1 << 20), 30)
    expired = response(client.poll(600))
    assert isinstance(expired, FetchResponse) and not expired.responses[0].partitions[0].records


def test_a_follower_before_the_log_start_is_sent_to_the_snapshot():
    log = MemoryLog()
    log.append_as_leader(batch(b"a"), 1, 0)
    log.append_as_leader(batch(b"b"), 1, 0)
    client = voter(log=log)
    elect(client)
    epoch = client.leader_epoch
    fetch(client, 2, epoch, 3, epoch)
    assert client.high_watermark == 3
    assert client.create_snapshot(2, b"image") == SnapshotId(2, 1)
    assert log.start_offset == 2 and log.latest_snapshot() == Snapshot(SnapshotId(2, 1), b"image")
    redirected = fetch(client, 3, epoch, 1, 1).snapshot_id
    assert (redirected.end_offset, redirected.epoch) == (2, 1)
    request = messages.fetch_snapshot_request("c", 3, epoch, SnapshotId(2, 1), 2, 3)
    chunk = response(client.handle_request(3, 11, request, 20)).topics[0].partitions[0]
    assert (chunk.size, chunk.position, chunk.unaligned_records) == (5, 2, b"age")
    request = messages.fetch_snapshot_request("c", 3, epoch, SnapshotId(9, 1), 0, 3)
    missing = response(client.handle_request(3, 12, request, 20)).topics[0].partitions[0]
    assert missing.error_code == ErrorCode.SNAPSHOT_NOT_FOUND


def test_a_leader_no_majority_fetches_from_resigns_and_ends_its_epoch():
    client = voter()
    elect(client, 5000)
    client.poll(5000 + 2999)
    assert client.is_leader
    effects = client.poll(5000 + 3001)
    assert client.quorum.role == Role.RESIGNED
    ends = [e for e in effects if isinstance(e, Send) and isinstance(e.request, EndQuorumEpochRequest)]
    assert sorted(e.destination for e in ends) == [2, 3]


def test_a_follower_named_first_successor_stands_at_once():
    client = voter(2)
    begin = messages.begin_quorum_epoch_request("c", 2, 1, 4)
    client.handle_request(1, 1, begin, 10)
    assert (client.quorum.role, client.leader_id, client.leader_epoch) == (Role.FOLLOWER, 1, 4)
    end = messages.end_quorum_epoch_request("c", 1, 4, [2, 3])
    client.handle_request(1, 2, end, 20)
    client.poll(20)
    assert client.quorum.role == Role.CANDIDATE and client.leader_epoch == 5


def test_requests_from_another_cluster_are_refused_and_a_refusal_backs_the_fetcher_off():
    client = voter()
    request = messages.vote_request("other", 1, 3, 2, 9, 9)
    refused = response(client.handle_request(2, 1, request, 10))
    assert refused.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID and client.leader_epoch == 0
    follower = voter(2)
    follower.handle_request(1, 1, messages.begin_quorum_epoch_request("c", 2, 1, 4), 10)
    [sent] = [e for e in follower.poll(20) if isinstance(e, Send)]
    follower.handle_response(1, sent.correlation_id, FetchResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID), 21)
    assert not [e for e in follower.poll(30) if isinstance(e, Send)]
    assert [e.destination for e in follower.poll(45) if isinstance(e, Send)] == [1]
