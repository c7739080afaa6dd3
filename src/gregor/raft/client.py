"""The raft client of one node (Kafka's KafkaRaftClient), sans-IO, for a quorum of any size.

Events go in: `handle_request` / `handle_response` (a message and the node it came from),
`poll` (the current time, from the caller's clock), `append` (the leader's own records).
Effects come out (see `effects`): requests and responses to put on the wire, a new high
watermark, a new election state, an installed snapshot. Timers are deadlines compared with the
`now_ms` handed in; election timeouts are randomised from an injected `random.Random`.

Roles and what moves them (the table is QuorumState's):
- a voter that hears from no leader within the election timeout becomes a candidate of the next
  epoch and asks every voter for its Vote; a majority makes it leader;
- the leader appends a LeaderChangeMessage control batch at the start of its epoch, tells the
  voters with BeginQuorumEpoch (again to any voter silent for half the fetch timeout, such as
  one that restarted and forgot the leader), and serves their Fetch requests; the high watermark is the
  offset a majority of voters has fetched past, once that includes the current epoch (Raft's
  commit rule); a leader that no majority fetched from in the last 1.5 fetch timeouts resigns
  (check quorum), so a partitioned leader stops acting;
- followers Fetch from the leader, truncate when the leader names a diverging epoch, install
  the leader's snapshot (FetchSnapshot) when their offset fell below its log start, and stand
  for election when the leader is silent for the fetch timeout;
- observers (nodes outside the voter set) fetch too but never vote or stand.
A quorum of one is the degenerate case: `start` elects the sole voter at once and an append is
committed as soon as it is durable.

Values are opaque bytes to raft (the metadata layer frames and decodes them); records are
written with a null key, one append = one batch, so an append is atomic.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, NamedTuple, Protocol, Sequence

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import LeaderChangeMessage, Message
from gregor.protocol.messages.begin_quorum_epoch import BeginQuorumEpochRequest, BeginQuorumEpochResponse
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from gregor.protocol.messages.end_quorum_epoch import EndQuorumEpochRequest, EndQuorumEpochResponse
from gregor.protocol.messages.fetch import FetchRequest, FetchResponse
from gregor.protocol.messages.fetch_snapshot import FetchSnapshotRequest, FetchSnapshotResponse
from gregor.protocol.messages.vote import VoteRequest, VoteResponse
from gregor.raft import messages
from gregor.raft.effects import Effect, HighWatermarkChanged, Respond, Send, SnapshotInstalled, StateChanged
from gregor.raft.quorum_state import EpochState, QuorumState, Role
from gregor.raft.quorum_state_file import NO_ID, MemoryQuorumStateStore, QuorumStateFile
from gregor.raft.replicated_log import ReplicatedLog, Snapshot, SnapshotId
from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records

MAX_BATCH_BYTES = 8 * 1024 * 1024
MAX_READ_BYTES = 8 * 1024 * 1024
LEADER_CHANGE_CONTROL_TYPE = 2
LEADER_CHANGE_VERSION = 0
_CONTROL_KEY = struct.Struct(">hh")
POSITION_OUT_OF_RANGE = 99  # Kafka's FetchSnapshot error; the generated ErrorCode table lacks it
_LEADERSHIP_ERRORS = (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                      ErrorCode.UNKNOWN_LEADER_EPOCH)


@dataclass(frozen=True)
class RaftConfig:
    """Kafka's `controller.quorum.*` timings (milliseconds) and fetch sizes."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = MAX_READ_BYTES
    snapshot_chunk_bytes: int = MAX_READ_BYTES


class CommittedEntry(NamedTuple):
    """One committed data record: offset, the leader epoch of its batch, its value."""

    offset: int
    epoch: int
    value: bytes


@dataclass
class ReplicaProgress:
    """What the leader knows of one replica: where its log ends, when it last fetched."""

    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1


class ParkedFetch(NamedTuple):
    source: int
    correlation_id: int
    request: FetchRequest
    deadline_ms: int


def leader_change_batch(leader_id: int, voters: Iterable[int], granting: Iterable[int], now_ms: int) -> bytes:
    """A control batch holding one LeaderChangeMessage (key: version 0, type LEADER_CHANGE)."""
    message = LeaderChangeMessage(
        version=LEADER_CHANGE_VERSION, leader_id=leader_id,
        voters=[LeaderChangeMessage.Voter(voter_id=v) for v in sorted(voters)],
        granting_voters=[LeaderChangeMessage.Voter(voter_id=v) for v in sorted(granting)])
    builder = BatchBuilder(is_control=True)
    builder.append(now_ms, _CONTROL_KEY.pack(0, LEADER_CHANGE_CONTROL_TYPE), message.encode(LEADER_CHANGE_VERSION))
    return builder.build()


class RaftClient:
    def __init__(self, node_id: int, voters: Iterable[int], log: ReplicatedLog,
                 state_file: QuorumStateFile | MemoryQuorumStateStore, cluster_id: str = "",
                 config: RaftConfig = RaftConfig(), rng: random.Random | None = None) -> None:
        self.node_id = node_id
        self.log = log
        self.config = config
        self.cluster_id = cluster_id
        self.quorum = QuorumState(node_id, frozenset(voters), state_file, cluster_id)
        self._rng = rng or random.Random()
        self._effects: list[Effect] = []
        self._high_watermark_moved = False
        self._next_correlation = 0
        self._election_deadline = 0
        self._fetch_deadline = 0
        self._fetch_in_flight: tuple[int, int] | None = None  # correlation id, sent at
        self._fetch_not_before = 0
        self._fetch_target = NO_ID
        self._snapshot_fetch: tuple[SnapshotId, bytearray] | None = None
        self._votes_pending: dict[int, int] = {}
        self._replicas: dict[int, ReplicaProgress] = {}
        self._epoch_start_offset = 0
        self._begin_epoch_pending: dict[int, int] = {}
        self._leader_since = 0
        self._parked: list[ParkedFetch] = []

    # -- lifecycle

    def start(self, now_ms: int) -> EpochState:
        """Restore the election state; a sole voter becomes leader of the next epoch."""
        self.quorum.initialize(self.log.last_fetched_epoch)
        snapshot = self.log.latest_snapshot()
        self.log.update_high_watermark(max(self.log.start_offset, snapshot.id.end_offset if snapshot else 0))
        if self.quorum.voters == {self.node_id}:
            self._become_candidate(now_ms)
        else:
            self._entered(now_ms)
        return self.quorum.state

    def resign(self, now_ms: int) -> list[Effect]:
        """Graceful leader shutdown: stop leading and ask the voters to elect a successor now."""
        self._resign(now_ms)
        return self._take_effects()

    def _resign(self, now_ms: int) -> None:
        if self.quorum.role != Role.LEADER:
            return
        successors = sorted((v for v in self.quorum.voters if v != self.node_id),
                            key=lambda v: -self._progress(v).end_offset)
        self._transition(self.quorum.transition_to_resigned, now_ms)
        request = messages.end_quorum_epoch_request(self.cluster_id, self.node_id, self.quorum.epoch, successors)
        for voter in successors:
            self._send(voter, request)

    def close(self) -> None:
        """Flush and close the log; a leader resigns, so its epoch is never led again."""
        if self.quorum.role == Role.LEADER:
            self.quorum.transition_to_resigned()
        self.log.flush(0)
        self.log.close()

    # -- state

    @property
    def is_leader(self) -> bool:
        return self.quorum.is_leader

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.quorum.voters

    @property
    def leader_epoch(self) -> int:
        return self.quorum.epoch

    @property
    def leader_id(self) -> int:
        return self.quorum.leader_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def leader_caught_up(self) -> bool:
        """This leader has committed an entry of its own epoch, so everything committed before
        it was elected is below the high watermark (and replayable)."""
        return self.quorum.is_leader and self.log.high_watermark > self._epoch_start_offset

    @property
    def end_offset(self) -> int:
        return self.log.end_offset

    # -- the leader's own records

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Append `values` as one batch in the current epoch; returns the last offset.

        KafkaError NOT_CONTROLLER when this node is not the leader, MESSAGE_TOO_LARGE when the
        batch would exceed 8 MiB (Kafka's limit for one raft batch).
        """
        if not self.quorum.is_leader:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"node {self.node_id} is not the metadata quorum leader")
        if not values:
            raise ValueError("nothing to append")
        builder = BatchBuilder()
        for value in values:
            builder.append(now_ms, None, value)
        if builder.estimated_size() > MAX_BATCH_BYTES:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"{len(values)} metadata records take {builder.estimated_size()} bytes, "
                             f"more than one batch may ({MAX_BATCH_BYTES})")
        return self._append_batch(builder.build(), now_ms)

    def _append_batch(self, batch: bytes, now_ms: int) -> int:
        result = self.log.append_as_leader(batch, self.quorum.epoch, now_ms)
        self.log.flush(now_ms)
        self._maybe_advance_high_watermark(now_ms)
        self._complete_parked(now_ms)
        return result.last_offset

    def committed(self, from_offset: int = 0) -> Iterator[CommittedEntry]:
        """Committed data records at or after `from_offset`, in order; control records skipped."""
        offset = max(from_offset, self.log.start_offset)
        high_watermark = self.log.high_watermark
        while offset < high_watermark:
            data = self.log.read(offset, high_watermark, MAX_READ_BYTES)
            batches, _ = scan_batches(data)
            if not batches:
                return
            for header, pos in batches:
                if not header.is_control:
                    for record in decode_records(data, pos, header, MAX_BATCH_BYTES * 4):
                        if offset <= record.offset < high_watermark:
                            yield CommittedEntry(record.offset, header.partition_leader_epoch,
                                                 bytes(record.value or b""))
                offset = header.last_offset + 1

    def read_committed(self, from_offset: int = 0) -> list[tuple[int, bytes]]:
        """(offset, value) of every committed data record from `from_offset`."""
        return [(entry.offset, entry.value) for entry in self.committed(from_offset)]

    # -- snapshots

    def create_snapshot(self, end_offset: int, data: bytes) -> SnapshotId:
        """Keep the state machine's image of every offset below `end_offset` (at most the high
        watermark) and drop the log prefix it covers."""
        if not self.log.start_offset < end_offset <= self.log.high_watermark:
            raise ValueError(f"a snapshot must end above the log start {self.log.start_offset} and at most at "
                             f"the high watermark {self.log.high_watermark}, not at {end_offset}")
        [(header, _)], _ = scan_batches(self.log.read(end_offset - 1, end_offset, 1))
        snapshot_id = SnapshotId(end_offset, header.partition_leader_epoch)
        self.log.store_snapshot(Snapshot(snapshot_id, data))
        self.log.delete_before_snapshot()
        return snapshot_id

    # -- events

    def poll(self, now_ms: int) -> list[Effect]:
        """Fire the timers that are due and return every pending effect."""
        role = self.quorum.role
        if role == Role.LEADER:
            self._poll_leader(now_ms)
        elif role == Role.FOLLOWER:
            if now_ms >= self._fetch_deadline:
                if self.is_voter:
                    self._become_candidate(now_ms)
                else:
                    self._fetch_target = NO_ID
                    self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
                    self._maybe_fetch(now_ms)
            else:
                self._maybe_fetch(now_ms)
        elif role == Role.CANDIDATE:
            if now_ms >= self._election_deadline:
                self._become_candidate(now_ms)
            else:
                self._request_votes(now_ms)
        elif self.is_voter:
            if now_ms >= self._election_deadline:
                self._become_candidate(now_ms)
        else:
            self._maybe_fetch(now_ms)
        return self._take_effects()

    def next_deadline(self) -> int | None:
        """When `poll` next has something to do, in the caller's clock (a time already past: at
        once); None when only an event can give it work. Polling before it does nothing, so the
        caller arms one timer for it after every event instead of polling on a period."""
        role = self.quorum.role
        if role == Role.LEADER:
            return self._leader_deadline()
        if role == Role.FOLLOWER:
            return _earliest(self._fetch_deadline, self._fetch_due())
        if role == Role.CANDIDATE:
            return _earliest(self._election_deadline, self._votes_due())
        if self.is_voter:
            return self._election_deadline
        return self._fetch_due()

    def _fetch_due(self) -> int | None:
        """When `_maybe_fetch` sends (or gives up on the fetch in flight)."""
        if self._fetch_in_flight is not None:
            return self._fetch_in_flight[1] + self.config.request_timeout_ms
        if self._fetch_target == NO_ID and (self.is_voter or not self.quorum.voters):
            return None
        return self._fetch_not_before

    def _votes_due(self) -> int | None:
        """When `_request_votes` asks a voter again (one never asked: at once)."""
        unanswered = self.quorum.voters - self.quorum.state.granted
        return min((self._votes_pending.get(voter, 0) + self.config.request_timeout_ms for voter in unanswered),
                   default=None)

    def _leader_deadline(self) -> int | None:
        """The earliest of `_poll_leader`'s timers: a parked fetch's max wait, a BeginQuorumEpoch
        to resend or a voter falling silent, and the moment check quorum would fail."""
        config = self.config
        due = [parked.deadline_ms for parked in self._parked]
        last_fetches = []
        for voter in self.quorum.voters - {self.node_id}:
            progress = self._replicas.get(voter)
            last_fetch = progress.last_fetch_ms if progress is not None else -1
            last_fetches.append(last_fetch)
            sent = self._begin_epoch_pending.get(voter)
            due.append(sent + config.request_timeout_ms if sent is not None
                       else last_fetch + config.fetch_timeout_ms // 2 + 1)
        others_needed = self.quorum.majority() - 1
        if others_needed > 0:
            kth_latest = sorted(last_fetches, reverse=True)[others_needed - 1]
            due.append(max(self._leader_since, kth_latest) + config.fetch_timeout_ms * 3 // 2 + 1)
        return min(due, default=None)

    def handle_request(self, source: int, correlation_id: int, request: Message, now_ms: int) -> list[Effect]:
        """A request from node `source`; its response is a `Respond` effect, now or later."""
        handler = self._request_handlers.get(type(request))
        if handler is None:
            raise TypeError(f"raft does not handle {type(request).__name__}")
        cluster_id = getattr(request, "cluster_id", None)
        if cluster_id is not None and self.cluster_id and cluster_id != self.cluster_id:
            response: Message | None = _RESPONSE_TYPES[type(request)](error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        else:
            response = handler(self, source, correlation_id, request, now_ms)
        if response is not None:
            self._effects.append(Respond(source, correlation_id, response))
        return self._take_effects()

    def handle_response(self, source: int, correlation_id: int, response: Message, now_ms: int) -> list[Effect]:
        """The response to a request this client sent (`Send` with this correlation id)."""
        handler = self._response_handlers.get(type(response))
        if handler is None or not isinstance(response, _RAFT_RESPONSES):
            raise TypeError(f"raft does not handle {type(response).__name__}")
        if response.error_code:
            if self._accept_fetch_response(source, correlation_id):
                self._fetch_failed(response.error_code, NO_ID, -1, now_ms)
        else:
            handler(self, source, correlation_id, response, now_ms)
        return self._take_effects()

    def _take_effects(self) -> list[Effect]:
        """The pending effects; a moved high watermark is reported once, last, at its newest value
        (so a sole voter whose caller never polls keeps no backlog)."""
        effects, self._effects = self._effects, []
        if self._high_watermark_moved:
            self._high_watermark_moved = False
            effects.append(HighWatermarkChanged(self.log.high_watermark))
        return effects

    def _send(self, destination: int, request: Message) -> int:
        self._next_correlation += 1
        self._effects.append(Send(destination, self._next_correlation, request))
        return self._next_correlation

    # -- transitions

    def _transition(self, move: Callable[..., EpochState], now_ms: int, *args: int) -> None:
        was_leader = self.quorum.role == Role.LEADER
        move(*args)
        if was_leader:
            self._complete_parked(now_ms)
        self._entered(now_ms)

    def _entered(self, now_ms: int) -> None:
        """Reset the timers and in-flight state of the role just entered."""
        self._effects.append(StateChanged(self.quorum.state))
        self._fetch_in_flight = None
        self._snapshot_fetch = None
        self._votes_pending = {}
        self._fetch_target = self.quorum.leader_id if self.quorum.role == Role.FOLLOWER else NO_ID
        self._election_deadline = now_ms + self._random_election_timeout()
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        self._fetch_not_before = now_ms

    def _random_election_timeout(self) -> int:
        timeout = self.config.election_timeout_ms
        return timeout + self._rng.randrange(timeout)

    def _maybe_transition(self, leader_id: int, epoch: int, now_ms: int) -> None:
        """Follow what a peer says about the epoch: a newer epoch, or this epoch's leader."""
        state = self.quorum.state
        if epoch > state.epoch:
            self._transition(self.quorum.transition_to_unattached, now_ms, epoch)
        elif epoch < state.epoch:
            return
        if (leader_id not in (NO_ID, self.node_id) and
                self.quorum.role in (Role.UNATTACHED, Role.VOTED, Role.CANDIDATE)):
            self._transition(self.quorum.transition_to_follower, now_ms, epoch, leader_id)

    def _become_candidate(self, now_ms: int) -> None:
        self._transition(self.quorum.transition_to_candidate, now_ms)
        if self.quorum.has_majority():
            self._become_leader(now_ms)
            return
        self._request_votes(now_ms)

    def _request_votes(self, now_ms: int) -> None:
        due = now_ms - self.config.request_timeout_ms
        request = None
        for voter in sorted(self.quorum.voters - self.quorum.state.granted):
            if self._votes_pending.get(voter, due) <= due:
                request = request or messages.vote_request(
                    self.cluster_id, voter, self.quorum.epoch, self.node_id, self.log.last_fetched_epoch,
                    self.log.end_offset)
                self._votes_pending[voter] = now_ms
                self._send(voter, request)

    def _become_leader(self, now_ms: int) -> None:
        self._transition(self.quorum.transition_to_leader, now_ms)
        self._replicas = {voter: ReplicaProgress() for voter in self.quorum.voters}
        self._begin_epoch_pending = {voter: now_ms - self.config.request_timeout_ms
                                     for voter in self.quorum.voters if voter != self.node_id}
        self._leader_since = now_ms
        self._epoch_start_offset = self.log.end_offset
        self._append_batch(leader_change_batch(self.node_id, self.quorum.voters, self.quorum.state.granted,
                                               now_ms), now_ms)
        self._poll_leader(now_ms)

    # -- leader

    def _poll_leader(self, now_ms: int) -> None:
        expired = [parked for parked in self._parked if parked.deadline_ms <= now_ms]
        if expired:
            self._parked = [parked for parked in self._parked if parked.deadline_ms > now_ms]
            for parked in expired:
                self._answer_parked(parked, now_ms)
        silent_since = now_ms - self.config.fetch_timeout_ms // 2
        due = now_ms - self.config.request_timeout_ms
        for voter in self.quorum.voters - {self.node_id}:
            if self._progress(voter).last_fetch_ms < silent_since:
                self._begin_epoch_pending.setdefault(voter, due)
        for voter, sent in self._begin_epoch_pending.items():
            if sent <= due:
                self._begin_epoch_pending[voter] = now_ms
                self._send(voter, messages.begin_quorum_epoch_request(self.cluster_id, voter, self.node_id,
                                                                      self.quorum.epoch))
        if not self._majority_fetched_within(now_ms - self.config.fetch_timeout_ms * 3 // 2):
            self._resign(now_ms)

    def _majority_fetched_within(self, since_ms: int) -> bool:
        """Check quorum: did a majority of voters (this leader included) fetch since `since_ms`?"""
        if self._leader_since >= since_ms:
            return True
        recent = sum(1 for voter in self.quorum.voters
                     if voter == self.node_id or self._progress(voter).last_fetch_ms >= since_ms)
        return recent >= self.quorum.majority()

    def _progress(self, replica: int) -> ReplicaProgress:
        progress = self._replicas.get(replica)
        if progress is None:
            progress = self._replicas[replica] = ReplicaProgress()
        return progress

    def _maybe_advance_high_watermark(self, now_ms: int) -> None:
        if self.quorum.role != Role.LEADER:
            return
        self._progress(self.node_id).end_offset = self.log.end_offset
        offsets = sorted((self._progress(voter).end_offset for voter in self.quorum.voters), reverse=True)
        replicated = offsets[self.quorum.majority() - 1]
        if replicated > self._epoch_start_offset and replicated > self.log.high_watermark:
            self.log.update_high_watermark(replicated)
            self._high_watermark_moved = True
            self._complete_parked(now_ms)

    def _complete_parked(self, now_ms: int) -> None:
        parked, self._parked = self._parked, []
        for fetch in parked:
            self._answer_parked(fetch, now_ms)

    def _answer_parked(self, parked: ParkedFetch, now_ms: int) -> None:
        response = self._fetch_answer(parked.source, parked.correlation_id, parked.request, now_ms, may_park=False)
        assert response is not None, "a fetch that may not park is always answered"
        self._effects.append(Respond(parked.source, parked.correlation_id, response))

    def _leader_error(self, requested_epoch: int) -> int:
        """The error for a request naming `requested_epoch` of the leader (NONE when it is ours)."""
        if self.quorum.role != Role.LEADER:
            if requested_epoch > self.quorum.epoch:
                return ErrorCode.UNKNOWN_LEADER_EPOCH
            return ErrorCode.NOT_LEADER_OR_FOLLOWER if requested_epoch == self.quorum.epoch else \
                ErrorCode.FENCED_LEADER_EPOCH
        if requested_epoch < self.quorum.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if requested_epoch > self.quorum.epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.NONE

    def _fetch_answer(self, source: int, correlation_id: int, request: FetchRequest, now_ms: int,
                      may_park: bool) -> FetchResponse | None:
        """The answer to a Fetch, or None when it waits (up to its max wait) for new records."""
        partition = request.topics[0].partitions[0]
        epoch, leader = self.quorum.epoch, self.quorum.leader_id
        error = self._leader_error(partition.current_leader_epoch)
        if error:
            return messages.fetch_response(error, leader, epoch, self.log.high_watermark, self.log.start_offset)
        fetch_offset = partition.fetch_offset
        snapshot = self.log.latest_snapshot()
        if snapshot is not None and (fetch_offset < self.log.start_offset or
                                     partition.last_fetched_epoch < snapshot.id.epoch or
                                     (fetch_offset == self.log.start_offset and
                                      partition.last_fetched_epoch != snapshot.id.epoch)):
            return messages.fetch_response(ErrorCode.NONE, leader, epoch, self.log.high_watermark,
                                           self.log.start_offset, snapshot_id=snapshot.id)
        end_epoch, end_offset = self.log.end_offset_for_epoch(partition.last_fetched_epoch)
        if end_epoch != partition.last_fetched_epoch or end_offset < fetch_offset:
            return messages.fetch_response(ErrorCode.NONE, leader, epoch, self.log.high_watermark,
                                           self.log.start_offset, diverging=(end_epoch, end_offset))
        replica = messages.fetch_replica_id(request)
        progress = self._progress(replica)
        progress.last_fetch_ms = now_ms
        if replica in self.quorum.voters:
            self._begin_epoch_pending.pop(replica, None)
        if fetch_offset >= progress.end_offset or replica not in self.quorum.voters:
            progress.end_offset = fetch_offset
        if fetch_offset >= self.log.end_offset:
            progress.last_caught_up_ms = now_ms
        self._maybe_advance_high_watermark(now_ms)
        records = self.log.read(fetch_offset, self.log.end_offset, partition.partition_max_bytes or
                                self.config.fetch_max_bytes) if fetch_offset < self.log.end_offset else b""
        if not records and may_park and request.max_wait_ms > 0:
            self._parked.append(ParkedFetch(source, correlation_id, request, now_ms + request.max_wait_ms))
            return None
        return messages.fetch_response(ErrorCode.NONE, leader, epoch, self.log.high_watermark,
                                       self.log.start_offset, records=records)

    # -- requests

    def _on_fetch(self, source: int, correlation_id: int, request: FetchRequest, now_ms: int) -> FetchResponse | None:
        return self._fetch_answer(source, correlation_id, request, now_ms, may_park=True)

    def _on_vote(self, source: int, correlation_id: int, request: VoteRequest, now_ms: int) -> VoteResponse:
        partition = request.topics[0].partitions[0]
        candidate = partition.candidate_id
        if candidate not in self.quorum.voters or not self.is_voter:
            return messages.vote_response(ErrorCode.INCONSISTENT_VOTER_SET, self.quorum.leader_id,
                                          self.quorum.epoch, False)
        if partition.candidate_epoch > self.quorum.epoch:
            self._maybe_transition(NO_ID, partition.candidate_epoch, now_ms)
        state = self.quorum.state
        granted = False
        if partition.candidate_epoch == state.epoch:
            up_to_date = ((partition.last_offset_epoch, partition.last_offset) >=
                          (self.log.last_fetched_epoch, self.log.end_offset))
            if state.role == Role.VOTED:
                granted = state.voted_id == candidate
            elif state.role == Role.UNATTACHED and up_to_date:
                self._transition(self.quorum.transition_to_voted, now_ms, state.epoch, candidate)
                granted = True
        return messages.vote_response(ErrorCode.NONE, self.quorum.leader_id, self.quorum.epoch, granted)

    def _on_begin_quorum_epoch(self, source: int, correlation_id: int, request: BeginQuorumEpochRequest,
                               now_ms: int) -> BeginQuorumEpochResponse:
        partition = request.topics[0].partitions[0]
        if partition.leader_epoch < self.quorum.epoch:
            return messages.begin_quorum_epoch_response(ErrorCode.FENCED_LEADER_EPOCH, self.quorum.leader_id,
                                                        self.quorum.epoch)
        self._maybe_transition(partition.leader_id, partition.leader_epoch, now_ms)
        return messages.begin_quorum_epoch_response(ErrorCode.NONE, self.quorum.leader_id, self.quorum.epoch)

    def _on_end_quorum_epoch(self, source: int, correlation_id: int, request: EndQuorumEpochRequest,
                             now_ms: int) -> EndQuorumEpochResponse:
        partition = request.topics[0].partitions[0]
        if partition.leader_epoch > self.quorum.epoch:
            self._maybe_transition(NO_ID, partition.leader_epoch, now_ms)
        elif (partition.leader_epoch == self.quorum.epoch and self.quorum.role == Role.FOLLOWER and
              self.quorum.leader_id == partition.leader_id):
            successors = messages.end_quorum_epoch_successors(partition)
            position = successors.index(self.node_id) if self.node_id in successors else len(successors)
            backoff = min(self.config.election_backoff_max_ms, self.config.retry_backoff_ms << min(position, 16))
            self._fetch_deadline = min(self._fetch_deadline, now_ms + (backoff if position else 0))
        return messages.end_quorum_epoch_response(ErrorCode.NONE, self.quorum.leader_id, self.quorum.epoch)

    def _on_fetch_snapshot(self, source: int, correlation_id: int, request: FetchSnapshotRequest,
                           now_ms: int) -> FetchSnapshotResponse:
        partition = request.topics[0].partitions[0]
        epoch, leader = self.quorum.epoch, self.quorum.leader_id
        error = self._leader_error(partition.current_leader_epoch)
        if error:
            return messages.fetch_snapshot_response(error, leader, epoch)
        wanted = SnapshotId(partition.snapshot_id.end_offset, partition.snapshot_id.epoch)
        snapshot = self.log.latest_snapshot()
        if snapshot is None or snapshot.id != wanted:
            return messages.fetch_snapshot_response(ErrorCode.SNAPSHOT_NOT_FOUND, leader, epoch, wanted)
        if not 0 <= partition.position <= len(snapshot.data):
            return messages.fetch_snapshot_response(POSITION_OUT_OF_RANGE, leader, epoch, wanted)
        size = min(request.max_bytes, self.config.snapshot_chunk_bytes)
        chunk = snapshot.data[partition.position:partition.position + size]
        return messages.fetch_snapshot_response(ErrorCode.NONE, leader, epoch, wanted, len(snapshot.data),
                                                partition.position, chunk)

    def _on_describe_quorum(self, source: int, correlation_id: int, request: DescribeQuorumRequest,
                            now_ms: int) -> DescribeQuorumResponse:
        if self.quorum.role != Role.LEADER:
            return messages.describe_quorum_response(ErrorCode.NOT_LEADER_OR_FOLLOWER, self.quorum.leader_id,
                                                     self.quorum.epoch, self.log.high_watermark, [], [])
        self._progress(self.node_id).last_fetch_ms = self._progress(self.node_id).last_caught_up_ms = now_ms

        def state(replica: int) -> DescribeQuorumResponse.ReplicaState:
            progress = self._progress(replica)
            return DescribeQuorumResponse.ReplicaState(
                replica_id=replica, log_end_offset=progress.end_offset, last_fetch_timestamp=progress.last_fetch_ms,
                last_caught_up_timestamp=progress.last_caught_up_ms)

        # As Kafka's LeaderState: the high watermark is unknown (-1) until this leader has
        # committed an entry of its own epoch; the local value may lag what the old leader committed.
        high_watermark = self.log.high_watermark if self.leader_caught_up else -1
        return messages.describe_quorum_response(
            ErrorCode.NONE, self.node_id, self.quorum.epoch, high_watermark,
            [state(v) for v in sorted(self.quorum.voters)],
            [state(r) for r in sorted(self._replicas) if r not in self.quorum.voters])

    # -- fetching, as a follower or an observer

    def _maybe_fetch(self, now_ms: int) -> None:
        if self._fetch_in_flight is not None:
            if now_ms - self._fetch_in_flight[1] < self.config.request_timeout_ms:
                return
            self._fetch_in_flight = None
            if self.quorum.role != Role.FOLLOWER:
                self._fetch_target = NO_ID
        if now_ms < self._fetch_not_before:
            return
        if self._fetch_target == NO_ID:
            if self.is_voter or not self.quorum.voters:
                return
            self._fetch_target = self._rng.choice(sorted(self.quorum.voters))
        if self._snapshot_fetch is not None:
            snapshot_id, received = self._snapshot_fetch
            request: Message = messages.fetch_snapshot_request(self.cluster_id, self.node_id, self.quorum.epoch,
                                                              snapshot_id, len(received),
                                                              self.config.snapshot_chunk_bytes)
        else:
            request = messages.fetch_request(self.cluster_id, self.node_id, self.quorum.epoch, self.log.end_offset,
                                             self.log.last_fetched_epoch, self.log.start_offset,
                                             self.config.fetch_max_wait_ms, self.config.fetch_max_bytes)
        self._fetch_in_flight = (self._send(self._fetch_target, request), now_ms)

    def _accept_fetch_response(self, source: int, correlation_id: int) -> bool:
        if self._fetch_in_flight is None or self._fetch_in_flight[0] != correlation_id:
            return False
        self._fetch_in_flight = None
        return True

    def _fetch_failed(self, error: int, leader_id: int, epoch: int, now_ms: int) -> None:
        before = self.quorum.state
        if error in _LEADERSHIP_ERRORS:
            self._maybe_transition(leader_id, epoch, now_ms)
        if self.quorum.state == before and not (self.is_voter and self.quorum.role == Role.FOLLOWER):
            self._fetch_target = NO_ID
        self._fetch_not_before = now_ms + self.config.retry_backoff_ms

    def _on_fetch_response(self, source: int, correlation_id: int, response: FetchResponse, now_ms: int) -> None:
        if not self._accept_fetch_response(source, correlation_id):
            return
        partition = response.responses[0].partitions[0]
        leader = partition.current_leader
        if partition.error_code:
            self._fetch_failed(partition.error_code, leader.leader_id, leader.leader_epoch, now_ms)
            return
        self._maybe_transition(leader.leader_id, leader.leader_epoch, now_ms)
        if self.quorum.role != Role.FOLLOWER or leader.leader_epoch != self.quorum.epoch:
            return
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        if partition.diverging_epoch.epoch >= 0:
            diverging = partition.diverging_epoch
            _, local_end = self.log.end_offset_for_epoch(diverging.epoch)
            self.log.truncate_to(min(diverging.end_offset, local_end))
        elif partition.snapshot_id.end_offset >= 0:
            self._snapshot_fetch = (SnapshotId(partition.snapshot_id.end_offset, partition.snapshot_id.epoch),
                                    bytearray())
        else:
            if partition.records:
                assert isinstance(partition.records, (bytes, bytearray, memoryview)), "raft records are bytes"
                records = bytes(partition.records)
                if scan_batches(records)[0][0][0].base_offset != self.log.end_offset:
                    return
                self.log.append_as_follower(records, now_ms)
                self.log.flush(now_ms)
            self._follow_high_watermark(partition.high_watermark)
        self._maybe_fetch(now_ms)

    def _follow_high_watermark(self, leader_high_watermark: int) -> None:
        before = self.log.high_watermark
        self.log.update_high_watermark(min(leader_high_watermark, self.log.end_offset))
        if self.log.high_watermark > before:
            self._high_watermark_moved = True

    def _on_fetch_snapshot_response(self, source: int, correlation_id: int, response: FetchSnapshotResponse,
                                    now_ms: int) -> None:
        if not self._accept_fetch_response(source, correlation_id) or self._snapshot_fetch is None:
            return
        partition = response.topics[0].partitions[0]
        leader = partition.current_leader
        if partition.error_code:
            if partition.error_code in (ErrorCode.SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE):
                self._snapshot_fetch = None
            self._fetch_failed(partition.error_code, leader.leader_id, leader.leader_epoch, now_ms)
            return
        snapshot_id, received = self._snapshot_fetch
        if partition.position != len(received):
            return
        chunk = partition.unaligned_records or b""
        assert isinstance(chunk, (bytes, bytearray, memoryview)), "raft records are bytes"
        received += chunk
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        if len(received) >= partition.size:
            self.log.install_snapshot(Snapshot(snapshot_id, bytes(received)))
            self._snapshot_fetch = None
            self._effects.append(SnapshotInstalled(snapshot_id))
            self._high_watermark_moved = True
        self._maybe_fetch(now_ms)

    # -- responses to the leader and the candidate

    def _on_vote_response(self, source: int, correlation_id: int, response: VoteResponse, now_ms: int) -> None:
        partition = response.topics[0].partitions[0]
        self._maybe_transition(partition.leader_id, partition.leader_epoch, now_ms)
        if self.quorum.role != Role.CANDIDATE or partition.leader_epoch != self.quorum.epoch:
            return
        if partition.vote_granted and self.quorum.record_granted_vote(source):
            self._become_leader(now_ms)

    def _on_begin_quorum_epoch_response(self, source: int, correlation_id: int,
                                        response: BeginQuorumEpochResponse, now_ms: int) -> None:
        partition = response.topics[0].partitions[0]
        self._maybe_transition(partition.leader_id, partition.leader_epoch, now_ms)
        if self.quorum.role == Role.LEADER and partition.leader_epoch == self.quorum.epoch and not partition.error_code:
            self._begin_epoch_pending.pop(source, None)

    def _on_end_quorum_epoch_response(self, source: int, correlation_id: int,
                                      response: EndQuorumEpochResponse, now_ms: int) -> None:
        partition = response.topics[0].partitions[0]
        self._maybe_transition(partition.leader_id, partition.leader_epoch, now_ms)

    _request_handlers: dict[type[Message], Callable[..., Message | None]] = {
        FetchRequest: _on_fetch, VoteRequest: _on_vote, BeginQuorumEpochRequest: _on_begin_quorum_epoch,
        EndQuorumEpochRequest: _on_end_quorum_epoch, FetchSnapshotRequest: _on_fetch_snapshot,
        DescribeQuorumRequest: _on_describe_quorum,
    }
    _response_handlers: dict[type[Message], Callable[..., None]] = {
        FetchResponse: _on_fetch_response, FetchSnapshotResponse: _on_fetch_snapshot_response,
        VoteResponse: _on_vote_response, BeginQuorumEpochResponse: _on_begin_quorum_epoch_response,
        EndQuorumEpochResponse: _on_end_quorum_epoch_response,
    }


_RAFT_RESPONSES = (FetchResponse, FetchSnapshotResponse, VoteResponse, BeginQuorumEpochResponse,
                   EndQuorumEpochResponse)
class _ErrorResponse(Protocol):
    """A response class built from its error code alone (every field but the error keeps its default)."""

    def __call__(self, *, error_code: int) -> Message: ...


_RESPONSE_TYPES: dict[type[Message], _ErrorResponse] = {
    FetchRequest: FetchResponse, VoteRequest: VoteResponse, BeginQuorumEpochRequest: BeginQuorumEpochResponse,
    EndQuorumEpochRequest: EndQuorumEpochResponse, FetchSnapshotRequest: FetchSnapshotResponse,
}


def _earliest(*deadlines: int | None) -> int | None:
    return min((deadline for deadline in deadlines if deadline is not None), default=None)
