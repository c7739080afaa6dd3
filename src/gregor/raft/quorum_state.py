"""The election state machine of one voter (Kafka's QuorumState), persisted before it acts.

Legal transitions, as in Kafka's QuorumState:

    Unattached, Resigned -> Unattached  learning of a higher epoch
                         -> Voted       granting a vote to a candidate
                         -> Candidate   election timeout
                         -> Follower    discovering a leader of an equal or higher epoch
    Voted                -> Unattached  learning of a higher epoch
                         -> Candidate   election timeout
                         -> Follower    discovering the leader of its epoch or a higher one
    Candidate            -> Unattached  learning of a higher epoch
                         -> Candidate   election timeout (next epoch)
                         -> Leader      a majority of votes
                         -> Follower    discovering a leader of an equal or higher epoch
    Leader               -> Unattached  learning of a higher epoch
                         -> Resigned    graceful shutdown
    Follower             -> Unattached  learning of a higher epoch
                         -> Candidate   fetch timeout
                         -> Follower    discovering a leader of a higher epoch

Every transition is written to the quorum-state file before it takes effect. On start a voter
that was leader comes back Resigned in the same epoch (it cannot lead that epoch again), one
that voted comes back Voted, anyone else Unattached.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gregor.raft.quorum_state_file import NO_ID, ElectionState, MemoryQuorumStateStore, QuorumStateFile


class Role(enum.Enum):
    UNATTACHED = "Unattached"
    VOTED = "Voted"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


TRANSITIONS: dict[Role, frozenset[Role]] = {
    Role.UNATTACHED: frozenset({Role.UNATTACHED, Role.VOTED, Role.CANDIDATE, Role.FOLLOWER}),
    Role.RESIGNED: frozenset({Role.UNATTACHED, Role.VOTED, Role.CANDIDATE, Role.FOLLOWER}),
    Role.VOTED: frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.FOLLOWER}),
    Role.CANDIDATE: frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.LEADER, Role.FOLLOWER}),
    Role.LEADER: frozenset({Role.UNATTACHED, Role.RESIGNED}),
    Role.FOLLOWER: frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.FOLLOWER}),
}


class IllegalStateTransition(RuntimeError):
    """A transition the table above forbids: a bug in the caller, never a peer's fault."""


@dataclass(frozen=True)
class EpochState:
    role: Role
    epoch: int
    leader_id: int = NO_ID
    voted_id: int = NO_ID
    granted: frozenset[int] = frozenset()


class QuorumState:
    def __init__(self, local_id: int, voters: frozenset[int], store: QuorumStateFile | MemoryQuorumStateStore,
                 cluster_id: str = "") -> None:
        self.local_id = local_id
        self.voters = frozenset(voters)
        self.store = store
        self.cluster_id = cluster_id
        self.state = EpochState(Role.UNATTACHED, 0)

    def initialize(self, log_last_epoch: int) -> EpochState:
        """Restore the state from the file; an epoch older than the log's last is not trusted."""
        stored = self.store.read()
        if stored is None or stored.epoch < log_last_epoch:
            self.state = EpochState(Role.UNATTACHED, max(log_last_epoch, 0))
        elif stored.leader_id == self.local_id:
            self.state = EpochState(Role.RESIGNED, stored.epoch, leader_id=self.local_id,
                                    voted_id=stored.voted_id)
        elif stored.voted_id != NO_ID:
            self.state = EpochState(Role.VOTED, stored.epoch, voted_id=stored.voted_id)
        else:
            self.state = EpochState(Role.UNATTACHED, stored.epoch)
        self._persist()
        return self.state

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def role(self) -> Role:
        return self.state.role

    @property
    def leader_id(self) -> int:
        return self.state.leader_id

    @property
    def is_leader(self) -> bool:
        return self.state.role == Role.LEADER

    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def _move(self, new: EpochState) -> EpochState:
        if new.role not in TRANSITIONS[self.state.role]:
            raise IllegalStateTransition(f"{self.state.role.value} cannot become {new.role.value}")
        if new.epoch < self.state.epoch:
            raise IllegalStateTransition(f"epoch cannot go back from {self.state.epoch} to {new.epoch}")
        self.state = new
        self._persist()
        return new

    def _persist(self) -> None:
        self.store.write(ElectionState(epoch=self.state.epoch, leader_id=self.state.leader_id,
                                       voted_id=self.state.voted_id, voters=self.voters,
                                       cluster_id=self.cluster_id))

    def transition_to_unattached(self, epoch: int) -> EpochState:
        if epoch <= self.state.epoch:
            raise IllegalStateTransition(f"unattached needs an epoch above {self.state.epoch}, not {epoch}")
        return self._move(EpochState(Role.UNATTACHED, epoch))

    def transition_to_voted(self, epoch: int, candidate_id: int) -> EpochState:
        if self.state.voted_id != NO_ID and epoch == self.state.epoch:
            raise IllegalStateTransition(f"already voted for {self.state.voted_id} in epoch {epoch}")
        return self._move(EpochState(Role.VOTED, epoch, voted_id=candidate_id))

    def transition_to_candidate(self) -> EpochState:
        """Start an election in the next epoch, voting for ourselves."""
        if self.local_id not in self.voters:
            raise IllegalStateTransition(f"{self.local_id} is not a voter of {sorted(self.voters)}")
        return self._move(EpochState(Role.CANDIDATE, self.state.epoch + 1, voted_id=self.local_id,
                                     granted=frozenset({self.local_id})))

    def record_granted_vote(self, voter_id: int) -> bool:
        """Count a vote for the current candidacy; True once a majority has granted."""
        if self.state.role != Role.CANDIDATE:
            raise IllegalStateTransition(f"{self.state.role.value} is not collecting votes")
        if voter_id in self.voters:
            self.state = EpochState(Role.CANDIDATE, self.state.epoch, voted_id=self.local_id,
                                    granted=self.state.granted | {voter_id})
        return self.has_majority()

    def has_majority(self) -> bool:
        return len(self.state.granted & self.voters) >= self.majority()

    def transition_to_leader(self) -> EpochState:
        if self.state.role != Role.CANDIDATE or not self.has_majority():
            raise IllegalStateTransition("only a candidate with a majority of votes becomes leader")
        return self._move(EpochState(Role.LEADER, self.state.epoch, leader_id=self.local_id,
                                     voted_id=self.local_id, granted=self.state.granted))

    def transition_to_follower(self, epoch: int, leader_id: int) -> EpochState:
        if self.state.role == Role.FOLLOWER and epoch == self.state.epoch:
            raise IllegalStateTransition(f"already following {self.state.leader_id} in epoch {epoch}")
        return self._move(EpochState(Role.FOLLOWER, epoch, leader_id=leader_id, voted_id=self.state.voted_id
                                     if epoch == self.state.epoch else NO_ID))

    def transition_to_resigned(self) -> EpochState:
        return self._move(EpochState(Role.RESIGNED, self.state.epoch, leader_id=self.local_id,
                                     voted_id=self.state.voted_id))
