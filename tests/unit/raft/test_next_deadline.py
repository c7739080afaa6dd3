"""The drive contract of the raft client: `next_deadline()` names the moment `poll` next acts.

The broker polls raft only at that deadline (no fixed period), so a deadline reported late would
be an election, a fetch or a check-quorum resignation that never happens, and one reported early a
wasted wake-up. The random simulations (tests/sim/raft) check both on every schedule; these pin
the individual timers down.
"""

from __future__ import annotations

import random

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.begin_quorum_epoch import BeginQuorumEpochRequest
from gregor.protocol.messages.fetch import FetchRequest
from gregor.protocol.messages.vote import VoteRequest
from gregor.raft import messages
from gregor.raft.client import RaftClient, RaftConfig
from gregor.raft.effects import Send
from gregor.raft.memory_log import MemoryLog
from gregor.raft.quorum_state import Role
from gregor.raft.quorum_state_file import MemoryQuorumStateStore

CONFIG = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, request_timeout_ms=500, retry_backoff_ms=20,
                    fetch_max_wait_ms=300)


def client(node_id: int = 1, voters: tuple[int, ...] = (1, 2, 3)) -> RaftClient:
    raft = RaftClient(node_id, voters, MemoryLog(), MemoryQuorumStateStore(), "c", CONFIG, random.Random(1))
    raft.start(0)
    raft.poll(0)
    return raft


def sent(effects: list, kind: type) -> list[Send]:
    return [e for e in effects if isinstance(e, Send) and isinstance(e.request, kind)]


def test_a_sole_voter_with_nothing_parked_has_no_deadline():
    raft = client(1, (1,))
    assert raft.is_leader and raft.next_deadline() is None


def test_an_unattached_voter_acts_exactly_at_its_election_timeout():
    raft = client()
    deadline = raft.next_deadline()
    assert deadline is not None and CONFIG.election_timeout_ms <= deadline < 2 * CONFIG.election_timeout_ms
    assert raft.poll(deadline - 1) == [] and raft.quorum.role == Role.UNATTACHED
    effects = raft.poll(deadline)
    assert raft.quorum.role == Role.CANDIDATE and len(sent(effects, VoteRequest)) == 2
    # unanswered votes are asked again after the request timeout, before the next election
    assert raft.next_deadline() == deadline + CONFIG.request_timeout_ms
    assert sent(raft.poll(deadline + CONFIG.request_timeout_ms), VoteRequest)


def elected(now: int = 5000) -> RaftClient:
    raft = client()
    [vote, _] = sent(raft.poll(now), VoteRequest)
    raft.handle_response(vote.destination, vote.correlation_id,
                         messages.vote_response(ErrorCode.NONE, -1, raft.leader_epoch, True), now)
    assert raft.is_leader
    return raft


def test_a_leader_resends_begin_quorum_epoch_then_resigns_when_check_quorum_fails():
    now = 5000
    raft = elected(now)
    # BeginQuorumEpoch went to both voters at election; neither answers nor fetches
    assert raft.next_deadline() == now + CONFIG.request_timeout_ms
    assert len(sent(raft.poll(now + CONFIG.request_timeout_ms - 1), BeginQuorumEpochRequest)) == 0
    assert len(sent(raft.poll(now + CONFIG.request_timeout_ms), BeginQuorumEpochRequest)) == 2
    resign_at = now + CONFIG.fetch_timeout_ms * 3 // 2 + 1
    while (deadline := raft.next_deadline()) is not None and deadline < resign_at:
        raft.poll(deadline)
        assert raft.is_leader
    assert raft.next_deadline() == resign_at
    raft.poll(resign_at)
    assert raft.quorum.role == Role.RESIGNED


def test_a_parked_fetch_is_answered_at_its_max_wait():
    now = 5000
    raft = elected(now)
    for voter in (2, 3):  # caught up, so the next fetch finds nothing and parks
        raft.handle_request(voter, 1, messages.fetch_request("c", voter, raft.leader_epoch, raft.end_offset,
                                                             raft.leader_epoch, 0, 0, 1 << 20), now)
    parked = raft.handle_request(2, 2, messages.fetch_request("c", 2, raft.leader_epoch, raft.end_offset,
                                                              raft.leader_epoch, 0, 250, 1 << 20), now + 10)
    assert parked == [] and raft.next_deadline() == now + 10 + 250
    assert raft.poll(now + 259) == []
    assert [e.correlation_id for e in raft.poll(now + 260)] == [2]


def test_a_follower_fetches_again_after_its_backoff_or_request_timeout():
    raft = client(2)
    raft.handle_request(1, 1, BeginQuorumEpochRequest(topics=[BeginQuorumEpochRequest.TopicData(
        topic_name="__cluster_metadata", partitions=[BeginQuorumEpochRequest.PartitionData(
            partition_index=0, leader_id=1, leader_epoch=3)])]), 100)
    assert raft.quorum.role == Role.FOLLOWER
    [fetch] = sent(raft.poll(100), FetchRequest)
    assert raft.next_deadline() == 100 + CONFIG.request_timeout_ms
    assert raft.poll(599) == []
    raft.handle_response(1, fetch.correlation_id, messages.fetch_response(ErrorCode.UNKNOWN_SERVER_ERROR, 1, 3, 0, 0),
                         200)
    assert raft.next_deadline() == 200 + CONFIG.retry_backoff_ms
    assert sent(raft.poll(220), FetchRequest)
