"""The quorum-state file round-trips Kafka's JSON, and the state machine obeys its table."""

from __future__ import annotations

import json
import os

import pytest

from gregor.raft.quorum_state import TRANSITIONS, IllegalStateTransition, QuorumState, Role
from gregor.raft.quorum_state_file import ElectionState, QuorumStateFile, QuorumStateFileError


def test_file_round_trip_in_kafkas_format(tmp_path):
    store = QuorumStateFile(str(tmp_path / "__cluster_metadata-0"))
    assert store.read() is None
    state = ElectionState(epoch=4, leader_id=1, voted_id=1, voters=frozenset({1, 3}), cluster_id="abc")
    store.write(state)
    assert store.read() == state
    with open(store.path, encoding="utf-8") as handle:
        assert json.load(handle) == {"clusterId": "abc", "leaderId": 1, "leaderEpoch": 4, "votedId": 1,
                                     "appliedOffset": 0, "currentVoters": [{"voterId": 1}, {"voterId": 3}],
                                     "data_version": 0}
    assert not os.path.exists(store.path + ".tmp")


def test_reads_kafkas_version_1_file_and_refuses_garbage(tmp_path):
    store = QuorumStateFile(str(tmp_path))
    with open(store.path, "w", encoding="utf-8") as handle:
        json.dump({"leaderId": -1, "leaderEpoch": 7, "votedId": 2,
                   "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "data_version": 1}, handle)
    assert store.read() == ElectionState(epoch=7, voted_id=2)
    for text in ("{", '{"leaderEpoch": "x"}', '{"leaderEpoch": 1, "data_version": 9}', "[]"):
        with open(store.path, "w", encoding="utf-8") as handle:
            handle.write(text)
        with pytest.raises(QuorumStateFileError):
            store.read()


def quorum(tmp_path, voters=(1, 2, 3)) -> QuorumState:
    return QuorumState(1, frozenset(voters), QuorumStateFile(str(tmp_path)))


def test_election_with_majority_and_persistence(tmp_path):
    state = quorum(tmp_path)
    assert state.initialize(0).role == Role.UNATTACHED
    state.transition_to_candidate()
    assert (state.role, state.epoch, state.has_majority()) == (Role.CANDIDATE, 1, False)
    with pytest.raises(IllegalStateTransition):
        state.transition_to_leader()
    assert state.record_granted_vote(3)
    state.transition_to_leader()
    assert state.is_leader and state.leader_id == 1
    assert QuorumStateFile(str(tmp_path)).read() == ElectionState(1, 1, 1, frozenset({1, 2, 3}))


def test_restart_as_former_leader_resigns_and_the_next_election_bumps_the_epoch(tmp_path):
    QuorumStateFile(str(tmp_path)).write(ElectionState(epoch=5, leader_id=1, voted_id=1, voters=frozenset({1})))
    state = quorum(tmp_path, voters=(1,))
    assert state.initialize(0).role == Role.RESIGNED
    state.transition_to_candidate()
    state.transition_to_leader()
    assert state.epoch == 6


def test_restart_remembers_a_vote_and_distrusts_an_epoch_behind_the_log(tmp_path):
    QuorumStateFile(str(tmp_path)).write(ElectionState(epoch=5, voted_id=2, voters=frozenset({1, 2, 3})))
    state = quorum(tmp_path)
    assert state.initialize(3).role == Role.VOTED
    with pytest.raises(IllegalStateTransition):
        state.transition_to_voted(5, 3)
    assert quorum(tmp_path).initialize(9).epoch == 9


def test_every_transition_outside_the_table_is_refused(tmp_path):
    leader = quorum(tmp_path, voters=(1,))
    leader.initialize(0)
    leader.transition_to_candidate()
    leader.transition_to_leader()
    assert Role.FOLLOWER not in TRANSITIONS[Role.LEADER]
    with pytest.raises(IllegalStateTransition):
        leader.transition_to_follower(1, 2)
    with pytest.raises(IllegalStateTransition):
        leader.transition_to_candidate()
    with pytest.raises(IllegalStateTransition):
        leader.transition_to_unattached(1)
    leader.transition_to_unattached(2)
    leader.transition_to_follower(2, 3)
    assert (leader.role, leader.leader_id) == (Role.FOLLOWER, 3)
    with pytest.raises(IllegalStateTransition):
        leader.transition_to_voted(3, 2)


def test_a_non_voter_cannot_stand(tmp_path):
    state = QuorumState(9, frozenset({1}), QuorumStateFile(str(tmp_path)))
    state.initialize(0)
    with pytest.raises(IllegalStateTransition):
        state.transition_to_candidate()
