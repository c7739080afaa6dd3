"""One partition replica hosted by this broker, leader or follower (Kafka's Partition), sans-IO.

The partition state comes from the metadata image (`apply_registration`): the replica named
leader becomes leader, the others follow it. Everything else is an event in, effects out:

- leader: `append_as_leader` (produce; `await_replication` for acks=all), `append_txn_marker`
  (WriteTxnMarkers; acks=all too), `read_records`,
  `offset_for_timestamp` and `delete_records_before` (consumers and admin clients), `fetch_for_follower`
  (a follower's fetch: its fetch offset is its log end offset, the "remote LEO"),
  `offsets_for_leader_epoch`, `on_alter_partition_response`, `tick`;
- follower: `on_fetch_response`, `on_offsets_for_leader_epoch_response`, `tick` (see
  `gregor.replication.fetcher`).

High watermark (leader): the smallest log end offset over the maximal ISR (`isr_state`) and over
followers outside it that are caught up within replica.lag.time.max.ms (they are about to join;
counting them keeps the watermark from overtaking them). It never moves back within an epoch and
is recomputed on every local append, follower fetch, ISR change and tick. With a single replica
it follows the log end offset. A new leader keeps the watermark it had; followers' log end
offsets are unknown until they fetch, which holds it where it is.

ISR (leader): a follower that has not caught up to the leader's log end offset for
replica.lag.time.max.ms is proposed out on `tick`; one whose log end offset reaches the high
watermark and the start of the current leader epoch is proposed in on its fetch. Proposals are
`ProposeIsr` effects (AlterPartition) and take effect when confirmed (KIP-497).

Fencing: requests carrying a current leader epoch older than this replica's get
FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH; requests for a leader to a follower get
NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Callable, Hashable, Sequence

from gregor.metadata.image import PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import FetchRequest, FetchResponse, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from gregor.replication.config import ReplicationConfig
from gregor.replication.delayed_produce import DelayedProduces, check_replicated
from gregor.replication.effects import Effect, ProduceCompleted, ProposeIsr
from gregor.replication.fetcher import FollowerFetcher
from gregor.replication.isr_state import IsrProposal, IsrState
from gregor.replication.remote_replica import RemoteReplica
from gregor.storage.errors import StorageError
from gregor.storage.leader_epoch_cache import UNDEFINED_EPOCH
from gregor.storage.file_slice import FetchDataInfo
from gregor.storage.log import AppendInfo, Log
from gregor.storage.producer_state import ProducerEntry
from gregor.storage.segment import OffsetPosition

NO_LEADER = -1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # Fetch's isolation_level
# ListOffsets' special timestamps
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP = -1, -2, -3, -4, -5
_EpochEndOffset = OffsetForLeaderEpochResponse.EpochEndOffset
# AlterPartition answers that say the proposal was applied by no controller, past or future
# (Kafka's Partition.handleAlterPartitionError): only these send the leader back to its committed ISR.
_NOT_APPLIED = frozenset({ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED})


class Partition:
    def __init__(self, topic: str, index: int, topic_id: uuid.UUID, log: Log, broker_id: int,
                 config: ReplicationConfig | None = None,
                 on_high_watermark: Callable[[Partition], None] | None = None,
                 high_watermark: int | None = None) -> None:
        """`high_watermark`: the checkpointed one after a restart (the log's own is its end offset)."""
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.key = (topic, index)  # as hosts and purgatories name it; built once, not per use
        self.log = log
        self.broker_id = broker_id
        self.config = config or ReplicationConfig()
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.replicas: list[int] = []
        self.isr_state = IsrState((), -1)
        self.remote: dict[int, RemoteReplica] = {}
        self.fetcher: FollowerFetcher | None = None
        self.leader_epoch_start_offset = -1
        self.delayed = DelayedProduces()
        self._propose_not_before = 0  # after the controller refused an ISR change
        self._on_high_watermark = on_high_watermark
        self._request_ids = itertools.count(1)
        #: The fetch sessions this partition rests in (`fetch_sessions`), by follower: told of the
        #: next change of what a follower's fetch could be told or could move (log end, high
        #: watermark, log start, leadership, ISR, waiting produces), when it must be served again
        self._resting: dict[int, Callable[[], Hashable | None]] = {}
        self._woken: dict[int, Hashable] = {}
        # set even without a checkpoint: the producer state learns which replayed markers are stable
        log.high_watermark = max(min(log.log_end_offset if high_watermark is None else high_watermark,
                                     log.log_end_offset), log.log_start_offset)

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower of {self.leader_id}"
        return (f"Partition({self.topic}-{self.index} on {self.broker_id}, {role}, epoch={self.leader_epoch}, "
                f"leo={self.log.log_end_offset}, hw={self.high_watermark}, {self.isr_state})")

    # -- fetch sessions

    def rest(self, replica_id: int, changed: Callable[[], Hashable | None]) -> None:
        """A fetch session of follower `replica_id` leaves this settled partition out of its
        fetches: `changed()` is called at the next change (before anything reads the follower's
        fetch times) and returns the key its parked fetches wait under, or None."""
        self._resting[replica_id] = changed

    def take_woken_sessions(self) -> list[Hashable]:
        """The keys of the parked fetches of the sessions this partition rested in when it last
        changed: an append to it must wake them (they wait under their session's key, not this
        partition's)."""
        if not self._woken:
            return []
        woken, self._woken = self._woken, {}
        return list(woken.values())

    def _changed(self) -> None:
        if self._resting:
            resting, self._resting = self._resting, {}
            for replica_id, changed in resting.items():
                key = changed()
                if key is not None:
                    self._woken[replica_id] = key

    # -- state

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def isr(self) -> list[int]:
        """The committed ISR."""
        return list(self.isr_state.committed)

    @property
    def partition_epoch(self) -> int:
        return self.isr_state.partition_epoch

    @property
    def min_insync_replicas(self) -> int:
        return self.log.config.min_insync_replicas

    def apply_registration(self, registration: PartitionRegistration, now_ms: int) -> list[Effect]:
        """Take a partition state from the metadata image: become leader or follower, or update the ISR.

        States older than the known one (lower leader epoch, or same epoch and no newer partition
        epoch) are ignored.
        """
        if registration.leader_epoch < self.leader_epoch or (
                registration.leader_epoch == self.leader_epoch
                and registration.partition_epoch <= self.isr_state.partition_epoch):
            return []
        self._changed()
        self.replicas = list(registration.replicas)
        self._propose_not_before = 0  # a refused ISR change may be proposed again against the new state
        same_epoch = registration.leader_epoch == self.leader_epoch and registration.leader == self.leader_id
        if registration.leader == self.broker_id and self.broker_id in registration.replicas:
            if same_epoch:
                self.isr_state.commit(tuple(registration.isr), registration.partition_epoch)
                self._sync_remote_replicas(now_ms)
                return self._update_high_watermark(now_ms)
            return self._become_leader(registration, now_ms)
        if same_epoch and self.fetcher is not None:
            self.isr_state.commit(tuple(registration.isr), registration.partition_epoch)
            return []
        return self._become_follower(registration, now_ms)

    def _become_leader(self, registration: PartitionRegistration, now_ms: int) -> list[Effect]:
        self.leader_id = self.broker_id
        self.leader_epoch = registration.leader_epoch
        self.isr_state = IsrState(tuple(registration.isr), registration.partition_epoch)
        self.fetcher = None
        self.leader_epoch_start_offset = self.log.log_end_offset
        self.log.leader_epoch_cache.assign(self.leader_epoch, self.leader_epoch_start_offset)
        self.remote = {}
        self._sync_remote_replicas(now_ms)
        return self._update_high_watermark(now_ms)

    def _sync_remote_replicas(self, now_ms: int) -> None:
        """One RemoteReplica per assigned follower; ISR members start caught up (Kafka's reset)."""
        wanted = [replica for replica in self.replicas if replica != self.broker_id]
        for replica in list(self.remote):
            if replica not in wanted:
                del self.remote[replica]
        for replica in wanted:
            if replica not in self.remote:
                self.remote[replica] = RemoteReplica(replica, now_ms if replica in self.isr_state.committed else None)

    def _become_follower(self, registration: PartitionRegistration, now_ms: int) -> list[Effect]:
        effects: list[Effect] = list(self.delayed.complete(self.high_watermark, None, 0, 0, now_ms))
        self.leader_id = registration.leader
        self.leader_epoch = registration.leader_epoch
        self.isr_state = IsrState(tuple(registration.isr), registration.partition_epoch)
        self.remote = {}
        self.leader_epoch_start_offset = -1
        self.fetcher = None
        if registration.leader != NO_LEADER and self.broker_id in registration.replicas:
            self.fetcher = FollowerFetcher(self.index, self.log, registration.leader, registration.leader_epoch,
                                           self.config, self._request_ids, now_ms)
            effects.extend(self.fetcher.poll(now_ms))
        return effects

    def stop(self, now_ms: int) -> list[Effect]:
        """This broker stops hosting the partition (reassigned away): produce requests waiting
        for replication are answered NOT_LEADER_OR_FOLLOWER, which clients retry elsewhere."""
        self._changed()
        return list(self.delayed.complete(self.high_watermark, None, 0, 0, now_ms))

    # -- leader: produce

    def append_as_leader(self, records: memoryview | bytes, now_ms: int, required_acks: int = 1,
                         from_client: bool = False) -> AppendInfo:
        """Append a produce request's records in the current leader epoch; the log parses and
        validates them (`from_client`: a client's Produce, which may not write control batches).

        Raises NOT_LEADER_OR_FOLLOWER on a follower and NOT_ENOUGH_REPLICAS for acks=all while the
        committed ISR is below min.insync.replicas (nothing is appended), besides the log's errors.
        """
        self._check_appendable(required_acks)
        info = self.log.append_as_leader(records, self.leader_epoch, now_ms, check_keys=True, from_client=from_client)
        self._changed()
        if not info.duplicate:
            self._maybe_increment_high_watermark(now_ms)
        return info

    def append_many_as_leader(self, record_sets: Sequence[memoryview | bytes], now_ms: int, required_acks: int = 1,
                              from_client: bool = False) -> list[AppendInfo | Exception]:
        """`append_as_leader` for several produce requests in order, each with its own outcome
        (its AppendInfo or the error `append_as_leader` would raise), written together
        (`Log.append_many_as_leader`) and the high watermark checked once."""
        try:
            self._check_appendable(required_acks)
        except KafkaError as error:
            return [error] * len(record_sets)
        outcomes = self.log.append_many_as_leader(record_sets, self.leader_epoch, now_ms, check_keys=True,
                                                  from_client=from_client)
        self._changed()
        if any(isinstance(outcome, AppendInfo) and not outcome.duplicate for outcome in outcomes):
            self._maybe_increment_high_watermark(now_ms)
        return outcomes

    def _check_appendable(self, required_acks: int) -> None:
        """A client's records go to the leader only, and acks=all ones only while the committed
        ISR holds min.insync.replicas (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS)."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {self.broker_id} is not the leader of {self.topic}-{self.index}")
        if required_acks == -1 and len(self.isr_state.committed) < self.min_insync_replicas:
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                             f"the ISR {list(self.isr_state.committed)} of {self.topic}-{self.index} is smaller than "
                             f"min.insync.replicas {self.min_insync_replicas}")

    def append_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                          now_ms: int) -> AppendInfo:
        """Complete a producer's transaction with its COMMIT or ABORT marker (WriteTxnMarkers), as
        an acks=all append: the caller waits with `await_replication`, as Kafka writes markers.

        Raises NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS (the ISR below min.insync.replicas),
        INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED (`Log.append_txn_marker`).
        """
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {self.broker_id} is not the leader of {self.topic}-{self.index}")
        if len(self.isr_state.committed) < self.min_insync_replicas:
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                             f"the ISR {list(self.isr_state.committed)} of {self.topic}-{self.index} is smaller than "
                             f"min.insync.replicas {self.min_insync_replicas}")
        info = self.log.append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit,
                                          self.leader_epoch, now_ms)
        self._changed()
        self._maybe_increment_high_watermark(now_ms)
        return info

    def await_replication(self, info: AppendInfo, token: object, now_ms: int,
                          timeout_ms: int) -> list[ProduceCompleted]:
        """acks=all: the answer now if the high watermark already passed the append, else later
        (an effect of the event that moves it, or of `tick` at the timeout)."""
        required = info.last_offset + 1
        error = check_replicated(required, self.high_watermark, len(self.isr_state.committed),
                                 self.min_insync_replicas)
        if error is not None:
            return [ProduceCompleted(token, error)]
        self._changed()
        self.delayed.add(required, self.leader_epoch, now_ms + timeout_ms, token)
        return []

    # -- leader: what consumers and admin clients read and delete

    def _leader_for(self, current_leader_epoch: int) -> None:
        """Kafka's localLogWithEpochOrThrow: a request naming a newer or older leader epoch than
        this replica's is refused first, then one that reaches a follower."""
        code = self._check_epoch(current_leader_epoch)
        if code != ErrorCode.NONE:
            raise KafkaError(code, f"{self.topic}-{self.index} on broker {self.broker_id}: {code.name} "
                                   f"(leader epoch {self.leader_epoch}, asked for {current_leader_epoch})")

    def read_records(self, fetch_offset: int, max_bytes: int, current_leader_epoch: int = -1,
                     isolation_level: int = READ_UNCOMMITTED, min_one_batch: bool = True) -> FetchDataInfo:
        """What a consumer may read: from the leader only (Kafka's default replica selector), fenced
        by its current leader epoch, whole batches below the high watermark. READ_COMMITTED reads
        to the last stable offset and carries the aborted transactions that overlap the batches it
        returns, so that the consumer can drop their records."""
        self._leader_for(current_leader_epoch)
        log = self.log
        info = log.read(fetch_offset, max_bytes, self.read_limit(isolation_level), min_one_batch)
        if isolation_level != READ_COMMITTED:
            return info
        if not info.slices:
            return info._replace(aborted_transactions=())
        return info._replace(aborted_transactions=tuple(log.aborted_transactions(fetch_offset, log.end_of_read(info))))

    def consumer_read_is_empty(self, fetch_offset: int, current_leader_epoch: int = -1,
                               isolation_level: int = READ_UNCOMMITTED) -> bool:
        """Whether `read_records` from `fetch_offset` would return no batch and raise nothing: this
        replica leads in the epoch asked for and the offset is where consumers' reads stop (the
        high watermark; the last stable offset for READ_COMMITTED). A caught-up consumer's fetch,
        the commonest one, parks on this without an empty read first."""
        if self._check_epoch(current_leader_epoch) != ErrorCode.NONE:
            return False
        log = self.log
        return fetch_offset == self.read_limit(isolation_level) and \
            log.log_start_offset <= fetch_offset <= log.log_end_offset

    def read_limit(self, isolation_level: int) -> int:
        """Where consumers' reads stop: the high watermark, the last stable offset for READ_COMMITTED."""
        return self.log.last_stable_offset if isolation_level == READ_COMMITTED else self.log.high_watermark

    def read_position(self, fetch_offset: int) -> OffsetPosition:
        """Where `read_records` from `fetch_offset` starts in the log, for `bytes_available`."""
        return self.log.offset_position(fetch_offset)

    def bytes_available(self, start: OffsetPosition, leader_epoch: int,
                        isolation_level: int = READ_UNCOMMITTED) -> int | None:
        """What `read_records` from `start` could return now (no max_bytes), counted from log
        positions without reading: the bytes of the whole batches below the high watermark (the
        last stable offset for READ_COMMITTED). None when only a read can answer: the replica is no
        longer the leader of `leader_epoch`, or the log changed under `start`."""
        if not self.is_leader or self.leader_epoch != leader_epoch:
            return None
        return self.log.bytes_between(start, self.read_limit(isolation_level))

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether the producer's transaction is open here in this epoch: its first write was
        verified (KIP-890), so later ones need not be."""
        entry = self.log.producer_state.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 and entry.epoch == producer_epoch

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest transaction still open (or whose marker is not yet
        replicated), else the high watermark (`Log.last_stable_offset`)."""
        return self.log.last_stable_offset

    def offset_for_timestamp(self, timestamp: int, current_leader_epoch: int = -1,
                             isolation_level: int = READ_UNCOMMITTED) -> tuple[int, int] | None:
        """ListOffsets on the leader: (offset, timestamp) for Kafka's special timestamps (-1 latest:
        the high watermark, the last stable offset for READ_COMMITTED; -2 earliest and -4 earliest
        local: the log start, -3 the record with the largest timestamp, -5 latest tiered: none
        without remote storage) or the first record at or after `timestamp` below the last stable
        offset for READ_COMMITTED (as Kafka filters it); None when there is none."""
        self._leader_for(current_leader_epoch)
        log = self.log
        if timestamp == LATEST_TIERED_TIMESTAMP:
            return None
        if timestamp == LATEST_TIMESTAMP:
            return self.read_limit(isolation_level), -1
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return log.log_start_offset, -1
        if timestamp == MAX_TIMESTAMP:
            return log.max_timestamp_offset()
        found = log.offset_for_timestamp(timestamp)
        if found is not None and isolation_level == READ_COMMITTED and found[0] >= self.last_stable_offset:
            return None
        return found

    def active_producers(self) -> dict[int, ProducerEntry]:
        """DescribeProducers on the leader: the producer state of its log (Kafka's activeProducerState)."""
        self._leader_for(-1)
        return dict(self.log.producer_state.producers)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords on the leader: the log start moves to `offset` (-1: the high watermark),
        never past the high watermark (OFFSET_OUT_OF_RANGE); the new log start offset."""
        self._leader_for(-1)
        self._changed()
        return self.log.delete_records_before(self.high_watermark if offset == -1 else offset)

    # -- leader: requests from followers

    def _check_epoch(self, current_leader_epoch: int, require_leader: bool = True) -> ErrorCode:
        if current_leader_epoch >= 0 and current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        if current_leader_epoch >= 0 and current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if require_leader and not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.NONE

    def fetch_for_follower(self, replica_id: int, request: FetchRequest.FetchPartition,
                           now_ms: int) -> tuple[FetchResponse.PartitionData, list[Effect]]:
        """Serve a follower's fetch: records from its fetch offset up to the log end offset.

        The fetch offset becomes the follower's remote LEO, which may expand the ISR and move the
        high watermark (the response carries the moved one). A fetch whose last fetched epoch
        disagrees with this log is answered with the diverging epoch instead, and changes nothing.
        """
        log = self.log
        response = FetchResponse.PartitionData(partition_index=self.index, high_watermark=-1,
                                               last_stable_offset=-1, log_start_offset=-1, records=b"")
        code = self._check_epoch(request.current_leader_epoch)
        follower = self.remote.get(replica_id)
        if code == ErrorCode.NONE and follower is None:
            code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        if code != ErrorCode.NONE or follower is None:
            response.error_code = code
            return response, []
        response.log_start_offset = log.log_start_offset
        if request.last_fetched_epoch >= 0:
            end = log.leader_epoch_cache.end_offset_for(request.last_fetched_epoch, log.log_end_offset)
            if end.epoch == UNDEFINED_EPOCH:
                response.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                return response, []
            if end.epoch < request.last_fetched_epoch or end.end_offset < request.fetch_offset:
                response.diverging_epoch = FetchResponse.EpochEndOffset(epoch=end.epoch, end_offset=end.end_offset)
                response.high_watermark, response.last_stable_offset = self.high_watermark, self.last_stable_offset
                return response, []
        leader_end = log.log_end_offset
        try:
            # a follower at the log end (every idle partition, on every fetch) has nothing to read
            records = b"" if request.fetch_offset == leader_end else log.read_bytes(
                request.fetch_offset, request.partition_max_bytes or self.config.replica_fetch_max_bytes)
        except StorageError as error:
            response.error_code = error.code
            return response, []
        follower.update_fetch_state(request.fetch_offset, leader_end, now_ms)
        effects = self._maybe_expand_isr(follower, now_ms)
        effects.extend(self._update_high_watermark(now_ms))
        response.records = records
        response.high_watermark, response.last_stable_offset = self.high_watermark, self.last_stable_offset
        return response, effects

    def fetch_at_log_end(self, replica_id: int, request: FetchRequest.FetchPartition,
                         now_ms: int) -> tuple[list[Effect] | None, tuple[int, int, int]] | None:
        """`fetch_for_follower` for a follower that asks again from the log end it already had
        (an idle partition of a fetch session, on every fetch), without building its answer: the
        same checks and state changes. Returns the effects for the host to carry out (None when
        there is nothing to: no effect and the high watermark did not move) and the high
        watermark, last stable offset and log start offset the answer would carry; None when the
        fetch is not that one (serve it in full). Its commonest case, a partition `settled_for` the
        follower, takes a few comparisons."""
        log = self.log
        leader_end = log.log_end_offset
        follower = self.remote.get(replica_id)
        epoch = request.current_leader_epoch
        if (follower is None or request.fetch_offset != leader_end or follower.log_end_offset != leader_end
                or not self.is_leader or (epoch >= 0 and epoch != self.leader_epoch)
                or (request.last_fetched_epoch >= 0
                    and request.last_fetched_epoch != log.leader_epoch_cache.latest_epoch)):
            return None  # `_check_epoch` refuses it, or it is not at the log end: served in full
        follower.update_fetch_state(leader_end, leader_end, now_ms)
        high_watermark = log.high_watermark
        effects: list[Effect] | None = None
        if not self.settled_for(replica_id):
            effects = self._maybe_expand_isr(follower, now_ms)
            effects.extend(self._update_high_watermark(now_ms))
            if not effects and log.high_watermark == high_watermark:
                effects = None
        return effects, (log.high_watermark, log.last_stable_offset, log.log_start_offset)

    def settled_for(self, replica_id: int) -> bool:
        """Whether a fetch from the log end by in-sync follower `replica_id` can neither be
        answered anything new nor move anything until `changes` moves: the high watermark is the
        log end, no produce waits here and no ISR change is pending."""
        log = self.log
        isr = self.isr_state
        return (self.is_leader and log.high_watermark == log.log_end_offset and not self.delayed
                and isr.pending is None and replica_id in isr.committed)

    def answer_at_log_end(self) -> FetchResponse.PartitionData:
        """The answer `fetch_for_follower` gives a follower at the log end (no records)."""
        return FetchResponse.PartitionData(partition_index=self.index, high_watermark=self.high_watermark,
                                           last_stable_offset=self.last_stable_offset,
                                           log_start_offset=self.log.log_start_offset, records=b"")

    def offsets_for_leader_epoch(self, request: OffsetForLeaderEpochRequest.OffsetForLeaderPartition) -> _EpochEndOffset:
        """Where epoch `request.leader_epoch` ends in this leader's log (the largest epoch <= it)."""
        code = self._check_epoch(request.current_leader_epoch)
        if code != ErrorCode.NONE:
            return _EpochEndOffset(error_code=code, partition=self.index)
        end = self.log.leader_epoch_cache.end_offset_for(request.leader_epoch, self.log.log_end_offset)
        return _EpochEndOffset(partition=self.index, leader_epoch=end.epoch, end_offset=end.end_offset)

    # -- leader: ISR and high watermark

    def _maybe_expand_isr(self, follower: RemoteReplica, now_ms: int) -> list[Effect]:
        isr = self.isr_state
        if isr.pending is not None or follower.broker_id in isr.committed or now_ms < self._propose_not_before:
            return []
        if follower.log_end_offset < self.high_watermark or follower.log_end_offset < self.leader_epoch_start_offset:
            return []
        return [self._propose(isr.committed + (follower.broker_id,), now_ms)]

    def _maybe_shrink_isr(self, now_ms: int) -> list[Effect]:
        isr = self.isr_state
        if isr.pending is not None or now_ms < self._propose_not_before:
            return []
        leader_end = self.log.log_end_offset
        lag = self.config.replica_lag_time_max_ms
        out_of_sync = [replica for replica in isr.committed if replica != self.broker_id and (
            replica not in self.remote or not self.remote[replica].is_caught_up(leader_end, now_ms, lag))]
        if not out_of_sync:
            return []
        return [self._propose(tuple(r for r in isr.committed if r not in out_of_sync), now_ms)]

    def _propose(self, isr: tuple[int, ...], now_ms: int) -> ProposeIsr:
        request_id = next(self._request_ids)
        self._changed()
        self.isr_state.pending = IsrProposal(request_id, isr, now_ms + self.config.replica_socket_timeout_ms)
        return ProposeIsr(request_id, self.leader_epoch, self.isr_state.partition_epoch, isr)

    def _resend_overdue_proposal(self, now_ms: int) -> list[Effect]:
        pending = self.isr_state.pending
        if pending is None or now_ms < pending.resend_ms:
            return []
        return [self._propose(pending.isr, now_ms)]

    def on_alter_partition_response(self, request_id: int, error: ErrorCode, leader_epoch: int,
                                    partition_epoch: int, isr: tuple[int, ...], now_ms: int) -> list[Effect]:
        """The controller's answer to proposal `request_id`: on success the state it committed."""
        if not self.is_leader:
            return []
        self._changed()
        pending = self.isr_state.pending
        if error == ErrorCode.NONE and leader_epoch == self.leader_epoch:
            if not self.isr_state.commit(tuple(isr), partition_epoch):
                self.isr_state.abandon(request_id)
            self._sync_remote_replicas(now_ms)
        elif pending is None or pending.request_id != request_id:
            pass  # the answer to a proposal sent again since, or settled by the metadata
        elif error in _NOT_APPLIED:
            self.isr_state.abandon(request_id)
            # proposed again after a backoff, not at once: an expansion refused because the
            # follower is fenced (restarted, not yet caught up with the metadata) was otherwise
            # proposed again on each of its fetches, hundreds of AlterPartitions a second
            # (found by the fault harness). Kafka's leader skips brokers its metadata shows
            # fenced or shutting down (KIP-841); the backoff bounds the same retries.
            self._propose_not_before = now_ms + self.config.replica_fetch_backoff_ms
        else:
            # Kafka's rule: any other answer (no answer, a stale partition epoch, no longer
            # leader) leaves the proposal pending, since a controller may have applied it (a retry
            # after a lost answer, a newer controller). The maximal ISR keeps counting it until
            # the metadata says what was committed; it is sent again after the backoff meanwhile.
            self.isr_state.pending = IsrProposal(pending.request_id, pending.isr,
                                                 now_ms + self.config.replica_fetch_backoff_ms)
        return self._update_high_watermark(now_ms)

    def _high_watermark_now(self, now_ms: int) -> int:
        """The smallest log end of the replicas that hold the high watermark back now: the maximal
        ISR's and those of followers still caught up (within replica.lag.time.max.ms)."""
        leader_end = self.log.log_end_offset
        high_watermark = leader_end
        maximal = self.isr_state.maximal
        lag = self.config.replica_lag_time_max_ms
        for replica_id, follower in self.remote.items():
            if follower.log_end_offset < high_watermark and (
                    replica_id in maximal or follower.is_caught_up(leader_end, now_ms, lag)):
                high_watermark = follower.log_end_offset
        return high_watermark

    def _maybe_increment_high_watermark(self, now_ms: int) -> bool:
        log = self.log
        new_high_watermark = self._high_watermark_now(now_ms)
        if new_high_watermark <= log.high_watermark:
            return False
        log.high_watermark = new_high_watermark
        self._changed()
        if self._on_high_watermark is not None:
            self._on_high_watermark(self)
        return True

    def _update_high_watermark(self, now_ms: int) -> list[Effect]:
        self._maybe_increment_high_watermark(now_ms)
        return self._complete_delayed(now_ms)

    def _complete_delayed(self, now_ms: int) -> list[Effect]:
        if not self.delayed:
            return []
        epoch = self.leader_epoch if self.is_leader else None
        return list(self.delayed.complete(self.high_watermark, epoch, len(self.isr_state.committed),
                                          self.min_insync_replicas, now_ms))

    # -- follower

    def on_fetch_response(self, request_id: int, data: FetchResponse.PartitionData, now_ms: int) -> list[Effect]:
        if self.fetcher is None:
            return []
        self.fetcher.on_fetch_response(request_id, data, now_ms)
        return self.fetcher.poll(now_ms)

    def still_fetching(self, request_id: int) -> bool:
        """Fetch `request_id` goes on unanswered in the follower's fetch session (`FollowerFetcher.still_fetching`)."""
        return self.fetcher is not None and self.fetcher.still_fetching(request_id)

    def on_offsets_for_leader_epoch_response(self, request_id: int, data: _EpochEndOffset,
                                             now_ms: int) -> list[Effect]:
        if self.fetcher is None:
            return []
        self.fetcher.on_epoch_end_response(request_id, data, now_ms)
        return self.fetcher.poll(now_ms)

    # -- time

    def next_deadline(self, now_ms: int) -> int | None:
        """When `tick` next has work (`now_ms` or earlier: at once; None: only an event brings
        any); ticking before it does nothing. The host re-asks after every event on the partition
        (an append included) and ticks it then, instead of ticking every partition on a period.

        A leader's timers: the moment each follower off the log end stops counting as caught up
        (replica.lag.time.max.ms after it last was: the ISR shrinks, and a follower outside the
        ISR stops holding the high watermark back), an unanswered ISR proposal to resend, and the
        earliest acks=all timeout; now, when the high watermark may move (that moment for a follower
        outside the ISR has passed since it was last computed) or an append moved it past acks=all
        produces still waiting."""
        if self.fetcher is not None:
            return self.fetcher.next_deadline()
        if not self.is_leader:
            return None
        due: list[int] = []
        isr = self.isr_state
        if isr.pending is not None:
            due.append(isr.pending.resend_ms)
        may_shrink_at = max(now_ms, self._propose_not_before) if isr.pending is None else None
        leader_end = self.log.log_end_offset
        lag = self.config.replica_lag_time_max_ms
        for replica_id in isr.committed:
            if replica_id != self.broker_id and replica_id not in self.remote and may_shrink_at is not None:
                due.append(may_shrink_at)
        for replica_id, follower in self.remote.items():
            if follower.log_end_offset == leader_end:
                continue
            caught_up = follower.last_caught_up_ms
            if caught_up is not None and caught_up + lag >= now_ms:
                due.append(caught_up + lag + 1)
            elif may_shrink_at is not None and replica_id in isr.committed:
                due.append(may_shrink_at)  # out of sync already: the ISR shrinks at the next tick
        if self._high_watermark_now(now_ms) > self.high_watermark:
            due.append(now_ms)  # a follower outside the ISR stopped holding it back since it was last moved
        produce_timeout = self.delayed.next_deadline()
        if produce_timeout is not None:
            due.append(produce_timeout)
            required = self.delayed.first_required()
            if required is not None and required <= self.high_watermark:
                due.append(now_ms)  # an append moved the high watermark past waiters: answer them now
        return min(due, default=None)

    def tick(self, now_ms: int) -> list[Effect]:
        """Timed work: ISR shrink, overdue proposals, high watermark, timeouts; a follower's next fetch."""
        if self.fetcher is not None:
            return self.fetcher.poll(now_ms)
        if not self.is_leader:
            return []
        effects = self._maybe_shrink_isr(now_ms)
        effects.extend(self._resend_overdue_proposal(now_ms))
        effects.extend(self._update_high_watermark(now_ms))
        return effects
