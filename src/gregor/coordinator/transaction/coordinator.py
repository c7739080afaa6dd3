"""Kafka's transaction coordinator as a sans-IO state machine (`__transaction_state`).

The broker decodes requests and calls one method per request with plain values and `now_ms`;
the coordinator answers with effects (`gregor.coordinator.transaction.effects`). Requests that
change a transaction (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) take the
broker's `token` and are answered by a `Respond` once their `__transaction_state` record is
written, as in Kafka. Completing a transaction is a second round: the PrepareCommit/PrepareAbort
record is written, the producer is answered, markers go to every partition of the transaction
(`WriteMarkers`, retried until written), and then the CompleteCommit/CompleteAbort record.

The coordinator never allocates producer ids itself: the caller passes `new_producer_id`, which
hands out one id from the broker's block (the edge makes sure one is ready before the call).

Time: `tick(now_ms)` fires the timed-out transaction scan
(`transaction.abort.timed.out.transaction.cleanup.interval.ms`, periodic as in Kafka) and the
retries of markers and completion records; `next_deadline()` says when it is next due.

Deliberate differences from Kafka: transactional ids are never expired
(`transactional.id.expiration.ms` is not implemented), and a fenced or timed-out transaction's
abort is written as PrepareAbort with the bumped epoch directly (Kafka 3.x also never writes its
in-memory PrepareEpochFence state).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from gregor.coordinator.deadlines import DeadlineQueue
from gregor.coordinator.partitioning import partition_for
from gregor.coordinator.transaction.config import TransactionConfig
from gregor.coordinator.transaction.effects import AppendTransaction, Effect, Respond, TxnResult, WriteMarkers
from gregor.coordinator.transaction.metadata import (
    MAX_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata, epoch_exhausted,
)
from gregor.coordinator.transaction.records import (
    TopicPartition, TransactionRecord, decode_key, decode_value, encode_key, encode_value,
)
from gregor.coordinator.transaction.results import (
    ListTransactionsResult, TransactionDescription, TransactionListing,
)
from gregor.coordinator.transaction.state import COMPLETED, TransactionState
from gregor.protocol.error_codes import ErrorCode

S = TransactionState
Done = Callable[[ErrorCode, int, list[Effect]], None]
"""Called with a write's outcome (mapped for the client), `now_ms` and the effect list to extend."""

_ABORT_SCAN = ("abort-scan", "")
_EXPIRE_SCAN = ("expire-scan", "")
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}
"""A failed `__transaction_state` append as the client sees it (TransactionStateManager)."""
_MARKER_RETRY = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NETWORK_EXCEPTION, ErrorCode.UNKNOWN_SERVER_ERROR,
})
"""Marker errors after which the partition is tried again; other errors stop the markers (a newer
coordinator or producer epoch fenced this one: INVALID_PRODUCER_EPOCH,
TRANSACTION_COORDINATOR_FENCED) or count as written (UNSUPPORTED_FOR_MESSAGE_FORMAT), as in
Kafka's TransactionMarkerRequestCompletionHandler."""
_MARKER_FENCED = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})


@dataclass
class _Markers:
    """The markers of one completing transaction: the partitions still without theirs."""

    txn: TransactionMetadata
    coordinator_epoch: int
    remaining: set[TopicPartition] = field(default_factory=set)
    in_flight: int | None = None


class TransactionCoordinator:
    def __init__(self, config: TransactionConfig) -> None:
        self.config = config
        self._txns: dict[str, TransactionMetadata] = {}
        self._owned: dict[int, int] = {}  # partition -> coordinator epoch
        self._loading: set[int] = set()
        self._deadlines: DeadlineQueue[tuple[str, str]] = DeadlineQueue()
        self._appends: dict[int, Callable[[ErrorCode, int, list[Effect]], None]] = {}
        self._markers: dict[str, _Markers] = {}
        self._in_flight: dict[int, str] = {}  # marker id -> transactional id
        self._ids = itertools.count(1)
        #: Transactions completed since this coordinator started, by outcome (CompleteCommit,
        #: CompleteAbort), and transactional ids expired: what the broker's metrics count.
        self.completed: Counter[str] = Counter()
        self.expired = 0

    # -- inspection

    def partition_for(self, transactional_id: str) -> int:
        """The `__transaction_state` partition whose leader coordinates `transactional_id`."""
        return partition_for(transactional_id, self.config.transaction_state_log_num_partitions)

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        return self._txns.get(transactional_id)

    @property
    def transactions(self) -> Mapping[str, TransactionMetadata]:
        return self._txns

    @property
    def pending_appends(self) -> int:
        return len(self._appends)

    def _status(self, transactional_id: str) -> ErrorCode | None:
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    # -- InitProducerId

    def init_producer_id(self, token: object, *, transactional_id: str, timeout_ms: int, producer_id: int = -1,
                         producer_epoch: int = -1, new_producer_id: Callable[[], int], now_ms: int) -> list[Effect]:
        """InitProducerId with a transactional id. `producer_id`/`producer_epoch` (v3+, KIP-360)
        name the producer's current id when it recovers from an error; -1 otherwise. A producer
        with an ongoing transaction has it aborted (its epoch fenced) and is told to retry with
        CONCURRENT_TRANSACTIONS, as Kafka does."""
        out: list[Effect] = []

        def respond(error: ErrorCode, pid: int = -1, epoch: int = -1) -> list[Effect]:
            out.append(Respond(token, TxnResult(error, pid, epoch)))
            return out

        if not transactional_id:
            return respond(ErrorCode.INVALID_REQUEST)
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return respond(ErrorCode.INVALID_REQUEST)
        error = self._status(transactional_id)
        if error is not None:
            return respond(error)
        if not 0 < timeout_ms <= self.config.transaction_max_timeout_ms:
            return respond(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        txn = self._txns.get(transactional_id)
        if txn is None:
            txn = TransactionMetadata(transactional_id, new_producer_id(), NO_PRODUCER_EPOCH, timeout_ms, S.EMPTY,
                                      last_update_ms=now_ms)
            self._txns[transactional_id] = txn
        if txn.pending_transition:
            return respond(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not _valid_producer_id(txn, *expected):
            return respond(ErrorCode.PRODUCER_FENCED)
        if txn.state is S.ONGOING:
            def fenced(error: ErrorCode, _now: int, done_out: list[Effect]) -> None:
                done_out.append(Respond(token, TxnResult(error if error else ErrorCode.CONCURRENT_TRANSACTIONS)))
            self._fence_and_abort(txn, now_ms, fenced, out)
            return out
        if txn.state not in COMPLETED:
            return respond(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and expected[0] == txn.previous_producer_id and txn.producer_id != expected[0]:
            return respond(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)  # a retried rotation
        if epoch_exhausted(txn.producer_epoch) and (expected is None or expected[1] == txn.producer_epoch):
            record = txn.prepare_producer_id_rotation(new_producer_id(), timeout_ms, now_ms, expected is not None)
        else:
            bump = _epoch_bump(txn, None if expected is None else expected[1])
            if bump is None:
                return respond(ErrorCode.PRODUCER_FENCED)
            record = txn.prepare_epoch_bump(timeout_ms, bump[0], bump[1], now_ms)

        def written(error: ErrorCode, _now: int, done_out: list[Effect]) -> None:
            done_out.append(Respond(token, TxnResult(error) if error else
                                    TxnResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)))
        self._write(txn, record, now_ms, written, out)
        return out

    # -- AddPartitionsToTxn, AddOffsetsToTxn

    def _producer_error(self, transactional_id: str, producer_id: int, producer_epoch: int
                        ) -> tuple[ErrorCode | None, TransactionMetadata | None]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        error = self._status(transactional_id)
        if error is not None:
            return error, None
        txn = self._txns.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if txn.pending_transition or txn.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        return None, txn

    def add_partitions(self, token: object, *, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], now_ms: int) -> list[Effect]:
        """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's `__consumer_offsets`
        partition): the answer, one error for every partition, once the Ongoing record with them
        is written (at once when they are all in the transaction already)."""
        out: list[Effect] = []
        error, txn = self._producer_error(transactional_id, producer_id, producer_epoch)
        if txn is None:
            out.append(Respond(token, TxnResult(error or ErrorCode.UNKNOWN_SERVER_ERROR)))
            return out
        wanted = set(partitions)
        if txn.state is S.ONGOING and wanted <= txn.partitions:
            out.append(Respond(token, TxnResult(ErrorCode.NONE)))
            return out

        def written(error: ErrorCode, _now: int, done_out: list[Effect]) -> None:
            done_out.append(Respond(token, TxnResult(error)))
        self._write(txn, txn.prepare_add_partitions(wanted, now_ms), now_ms, written, out)
        return out

    def verify_partitions(self, *, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ with verifyOnly (KIP-890): is each partition in the ongoing
        transaction? INVALID_TXN_STATE for those that are not; nothing is written."""
        wanted = list(partitions)
        error, txn = self._producer_error(transactional_id, producer_id, producer_epoch)
        if txn is None:
            return {partition: error or ErrorCode.UNKNOWN_SERVER_ERROR for partition in wanted}
        return {partition: ErrorCode.NONE if txn.state is S.ONGOING and partition in txn.partitions
                else ErrorCode.INVALID_TXN_STATE for partition in wanted}

    # -- EndTxn

    def end_transaction(self, token: object, *, transactional_id: str, producer_id: int, producer_epoch: int,
                        commit: bool, now_ms: int, epoch_bump: bool = False,
                        new_producer_id: Callable[[], int] | None = None) -> list[Effect]:
        """EndTxn. `epoch_bump` is transaction protocol v2 (EndTxn v5+ while the cluster's
        `transaction.version` is 2, KIP-890): the markers and the answer carry the next epoch,
        and an abort without partitions is allowed. The answer comes once PrepareCommit or
        PrepareAbort is written; the markers follow."""
        out: list[Effect] = []

        def respond(error: ErrorCode, txn: TransactionMetadata | None = None) -> list[Effect]:
            pid, epoch = (txn.producer_id, txn.producer_epoch) if txn is not None and epoch_bump else (-1, -1)
            out.append(Respond(token, TxnResult(error, pid, epoch)))
            return out

        if not transactional_id:
            return respond(ErrorCode.INVALID_REQUEST)
        error = self._status(transactional_id)
        if error is not None:
            return respond(error)
        txn = self._txns.get(transactional_id)
        if txn is None:
            return respond(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        state = txn.state
        if epoch_bump:
            retry = (txn.producer_id == producer_id and producer_epoch == txn.last_producer_epoch
                     and state in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            if txn.producer_id != producer_id:
                return respond(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
            if not retry and producer_epoch != txn.producer_epoch:
                return respond(ErrorCode.PRODUCER_FENCED)
        else:
            retry = True
            if txn.producer_id != producer_id:
                return respond(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
            if producer_epoch != txn.producer_epoch:
                return respond(ErrorCode.PRODUCER_FENCED)
        if txn.pending_transition:
            return respond(ErrorCode.CONCURRENT_TRANSACTIONS)
        wanted_complete, wanted_prepare = ((S.COMPLETE_COMMIT, S.PREPARE_COMMIT) if commit
                                           else (S.COMPLETE_ABORT, S.PREPARE_ABORT))
        if state is wanted_complete and retry:
            return respond(ErrorCode.NONE, txn)
        if state is wanted_prepare:
            return respond(ErrorCode.CONCURRENT_TRANSACTIONS)
        empty_abort = epoch_bump and not commit and state in COMPLETED
        if state is not S.ONGOING and not empty_abort:
            return respond(ErrorCode.INVALID_TXN_STATE)
        epoch, next_producer_id = None, NO_PRODUCER_ID
        if epoch_bump:
            epoch = txn.producer_epoch + 1
            if epoch_exhausted(epoch) and new_producer_id is not None:
                next_producer_id = new_producer_id()

        def written(error: ErrorCode, done_ms: int, done_out: list[Effect]) -> None:
            if error:
                done_out.append(Respond(token, TxnResult(error)))
                return
            if not epoch_bump:
                done_out.append(Respond(token, TxnResult(ErrorCode.NONE)))
            elif txn.next_producer_id != NO_PRODUCER_ID:
                done_out.append(Respond(token, TxnResult(ErrorCode.NONE, txn.next_producer_id, 0)))
            else:
                done_out.append(Respond(token, TxnResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)))
            self._start_markers(txn, done_ms, done_out)
        record = txn.prepare_end(commit, now_ms, epoch, transaction_version=2 if epoch_bump else None,
                                 next_producer_id=next_producer_id)
        self._write(txn, record, now_ms, written, out)
        return out

    # -- aborting

    def _fence_and_abort(self, txn: TransactionMetadata, now_ms: int, on_done: Done, out: list[Effect]) -> None:
        """Abort `txn` with its epoch bumped, so that the producer that began it is fenced."""
        epoch = txn.producer_epoch if txn.failed_epoch_fence or txn.producer_epoch >= MAX_EPOCH \
            else txn.producer_epoch + 1

        def written(error: ErrorCode, done_ms: int, done_out: list[Effect]) -> None:
            if error:
                txn.failed_epoch_fence = True
            else:
                self._start_markers(txn, done_ms, done_out)
            on_done(error, done_ms, done_out)
        self._write(txn, txn.prepare_end(False, now_ms, epoch), now_ms, written, out)

    def _abort_timed_out(self, now_ms: int, out: list[Effect]) -> None:
        for txn in list(self._txns.values()):
            if (txn.state is S.ONGOING and not txn.pending_transition
                    and txn.start_ms + txn.timeout_ms < now_ms):
                self._fence_and_abort(txn, now_ms, lambda _error, _now, _out: None, out)

    # -- markers

    def _start_markers(self, txn: TransactionMetadata, now_ms: int, out: list[Effect]) -> None:
        partition = self.partition_for(txn.transactional_id)
        job = _Markers(txn, self._owned[partition], set(txn.partitions))
        self._markers[txn.transactional_id] = job
        self._send_markers(job, now_ms, out)

    def _send_markers(self, job: _Markers, now_ms: int, out: list[Effect]) -> None:
        txn = job.txn
        if not job.remaining:
            del self._markers[txn.transactional_id]
            self._complete(txn, now_ms, out)
            return
        job.in_flight = next(self._ids)
        self._in_flight[job.in_flight] = txn.transactional_id
        out.append(WriteMarkers(job.in_flight, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                txn.state is S.PREPARE_COMMIT, job.coordinator_epoch, tuple(sorted(job.remaining))))

    def markers_written(self, marker_id: int, errors: Mapping[TopicPartition, ErrorCode],
                        now_ms: int) -> list[Effect]:
        """The outcome of the `WriteMarkers` with this `marker_id`, per partition."""
        out: list[Effect] = []
        transactional_id = self._in_flight.pop(marker_id, None)
        job = None if transactional_id is None else self._markers.get(transactional_id)
        if job is None or job.in_flight != marker_id:
            return out
        job.in_flight = None
        retry = False
        for partition, error in errors.items():
            if error in _MARKER_FENCED:
                del self._markers[job.txn.transactional_id]
                return out
            if error in _MARKER_RETRY:
                retry = True
            else:
                job.remaining.discard(partition)
        if retry and job.remaining:
            self._deadlines.schedule(("markers", job.txn.transactional_id), now_ms + self.config.retry_backoff_ms)
        else:
            self._send_markers(job, now_ms, out)
        return out

    def _complete(self, txn: TransactionMetadata, now_ms: int, out: list[Effect]) -> None:
        """Every marker is written: CompleteCommit / CompleteAbort, retried until written."""
        record = txn.prepare_complete(now_ms)

        def written(error: ErrorCode, done_ms: int, done_out: list[Effect]) -> None:
            if error in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.UNKNOWN_SERVER_ERROR):
                self._deadlines.schedule(("complete", txn.transactional_id), done_ms + self.config.retry_backoff_ms)
            elif error is ErrorCode.NONE:
                self.completed[txn.state.display_name] += 1
        self._write(txn, record, now_ms, written, out)

    def _expire_transactional_ids(self, now_ms: int, out: list[Effect]) -> None:
        """Kafka's removal of expired transactional ids: one with no transaction in progress and no
        update for `transactional.id.expiration.ms` gets a tombstone in `__transaction_state` and is
        forgotten (DescribeTransactions answers TRANSACTIONAL_ID_NOT_FOUND; InitProducerId starts afresh)."""
        for txn in list(self._txns.values()):
            if (txn.state in COMPLETED and not txn.pending_transition
                    and txn.last_update_ms + self.config.transactional_id_expiration_ms <= now_ms):
                self._write(txn, txn.prepare_dead(now_ms), now_ms, self._forget(txn), out)

    def _forget(self, txn: TransactionMetadata) -> Done:
        def written(error: ErrorCode, _now: int, _out: list[Effect]) -> None:
            if error is ErrorCode.NONE and self._txns.get(txn.transactional_id) is txn:
                del self._txns[txn.transactional_id]
                self.expired += 1
        return written

    # -- writes

    def _write(self, txn: TransactionMetadata, record: TransactionRecord, now_ms: int, on_done: Done,
               out: list[Effect]) -> None:
        transactional_id = txn.transactional_id
        partition = self.partition_for(transactional_id)
        coordinator_epoch = self._owned[partition]
        append_id = next(self._ids)

        def done(error: ErrorCode, done_ms: int, done_out: list[Effect]) -> None:
            if self._owned.get(partition) != coordinator_epoch or self._txns.get(transactional_id) is not txn:
                on_done(ErrorCode.NOT_COORDINATOR, done_ms, done_out)  # the partition moved on meanwhile
                return
            if error is ErrorCode.NONE:
                txn.complete_transition()
            else:
                txn.abort_transition()
            on_done(_APPEND_ERRORS.get(error, error), done_ms, done_out)

        self._appends[append_id] = done
        value = None if record.state is S.DEAD else encode_value(record)
        out.append(AppendTransaction(partition, encode_key(transactional_id), value, now_ms, append_id))

    def append_done(self, append_id: int, error: ErrorCode, now_ms: int) -> list[Effect]:
        """The outcome of the `AppendTransaction` with this `append_id` (NONE once committed)."""
        out: list[Effect] = []
        callback = self._appends.pop(append_id, None)
        if callback is not None:
            callback(error, now_ms, out)
        return out

    # -- time

    def tick(self, now_ms: int) -> list[Effect]:
        """Fire what is due at `now_ms`: the timed-out transaction scan, marker and completion retries."""
        out: list[Effect] = []
        while (key := self._deadlines.pop_due(now_ms)) is not None:
            kind, transactional_id = key
            if key == _ABORT_SCAN:
                self._abort_timed_out(now_ms, out)
                if self._owned:
                    self._schedule_scan(now_ms)
                continue
            if key == _EXPIRE_SCAN:
                self._expire_transactional_ids(now_ms, out)
                if self._owned:
                    self._schedule_scan(now_ms)
                continue
            txn = self._txns.get(transactional_id)
            if kind == "markers":
                job = self._markers.get(transactional_id)
                if job is not None and job.in_flight is None:
                    self._send_markers(job, now_ms, out)
            elif kind == "complete" and txn is not None and not txn.pending_transition and txn.state in (
                    S.PREPARE_COMMIT, S.PREPARE_ABORT) and transactional_id not in self._markers:
                self._complete(txn, now_ms, out)
        return out

    def next_deadline(self) -> int | None:
        return self._deadlines.next_deadline()

    def _schedule_scan(self, now_ms: int) -> None:
        """The two periodic scans, as Kafka's: timed-out transactions, expired transactional ids."""
        config = self.config
        if self._deadlines.deadline(_ABORT_SCAN) is None:
            self._deadlines.schedule(_ABORT_SCAN, now_ms + config.transaction_abort_timed_out_transaction_cleanup_interval_ms)
        if self._deadlines.deadline(_EXPIRE_SCAN) is None:
            self._deadlines.schedule(_EXPIRE_SCAN,
                                     now_ms + config.transaction_remove_expired_transaction_cleanup_interval_ms)

    # -- __transaction_state leadership

    def begin_load(self, partition: int) -> None:
        """This broker became leader of `partition`: its ids answer COORDINATOR_LOAD_IN_PROGRESS
        until `load_partition`."""
        self._loading.add(partition)

    def load_partition(self, partition: int, coordinator_epoch: int, records: Iterable[tuple[bytes, bytes | None]],
                       now_ms: int) -> list[Effect]:
        """Rebuild the transactions of `partition` from its records (key, value-or-None, in offset
        order) under `coordinator_epoch` (the partition's leader epoch, which markers carry so
        that partitions refuse a deposed coordinator's). Transactions left in PrepareCommit or
        PrepareAbort get their markers again and are completed."""
        out = self.unload_partition(partition, now_ms)
        latest: dict[str, TransactionRecord | None] = {}
        for key, value in records:
            transactional_id = decode_key(key)
            if transactional_id is not None:
                latest[transactional_id] = None if value is None else decode_value(value)
        self._loading.discard(partition)
        self._owned[partition] = coordinator_epoch
        for transactional_id, record in latest.items():
            if record is not None and record.state is not S.DEAD:
                txn = self._txns[transactional_id] = TransactionMetadata.from_record(transactional_id, record)
                if txn.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                    self._start_markers(txn, now_ms, out)
        self._schedule_scan(now_ms)
        return out

    def unload_partition(self, partition: int, now_ms: int) -> list[Effect]:
        """This broker no longer leads `partition`: forget its transactions (writes still in
        flight answer NOT_COORDINATOR when they complete; markers in flight are dropped)."""
        self._loading.discard(partition)
        self._owned.pop(partition, None)
        gone = {t for t in self._txns if self.partition_for(t) == partition}
        for transactional_id in gone:
            del self._txns[transactional_id]
            self._markers.pop(transactional_id, None)
            self._deadlines.cancel(("markers", transactional_id))
            self._deadlines.cancel(("complete", transactional_id))
        self._in_flight = {marker_id: t for marker_id, t in self._in_flight.items() if t not in gone}
        if not self._owned:
            self._deadlines.cancel(_ABORT_SCAN)
            self._deadlines.cancel(_EXPIRE_SCAN)
        return []

    # -- admin

    def describe(self, transactional_ids: Iterable[str]) -> list[TransactionDescription]:
        """DescribeTransactions."""
        return [self._describe(transactional_id) for transactional_id in transactional_ids]

    def _describe(self, transactional_id: str) -> TransactionDescription:
        error = self._status(transactional_id)
        if error is not None:
            return TransactionDescription(transactional_id, error)
        txn = self._txns.get(transactional_id)
        if txn is None:
            return TransactionDescription(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return TransactionDescription(transactional_id, ErrorCode.NONE, txn.state.display_name, txn.timeout_ms,
                                      txn.start_ms, txn.producer_id, txn.producer_epoch,
                                      tuple(sorted(txn.partitions)))

    def list_transactions(self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                          duration_ms: int = -1, now_ms: int) -> ListTransactionsResult:
        """ListTransactions; empty filters match everything, `duration_ms` (v1) keeps those
        running at least that long. COORDINATOR_LOAD_IN_PROGRESS while a partition loads."""
        if self._loading:
            return ListTransactionsResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        wanted: set[TransactionState] = set()
        unknown = []
        for name in states:
            state = TransactionState.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                wanted.add(state)
        pids = set(producer_ids)
        if unknown and not wanted:
            return ListTransactionsResult(ErrorCode.NONE, tuple(unknown))
        listed = tuple(
            TransactionListing(txn.transactional_id, txn.producer_id, txn.state.display_name)
            for txn in self._txns.values()
            if (not wanted or txn.state in wanted) and (not pids or txn.producer_id in pids)
            and (duration_ms < 0 or (txn.start_ms >= 0 and now_ms - txn.start_ms >= duration_ms)))
        return ListTransactionsResult(ErrorCode.NONE, tuple(unknown), listed)


def _valid_producer_id(txn: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
    """KIP-360: the producer named its current id and epoch; is it this transaction's?"""
    return (txn.producer_epoch == NO_PRODUCER_EPOCH or txn.producer_id == producer_id
            or (txn.previous_producer_id == producer_id and epoch_exhausted(producer_epoch)))


def _epoch_bump(txn: TransactionMetadata, expected_epoch: int | None) -> tuple[int, int] | None:
    """(new epoch, last epoch) for InitProducerId; None when the expected epoch is stale (fenced).
    A producer retrying after its bump was written gets the same epoch again."""
    bumped = txn.producer_epoch + 1
    if expected_epoch is None:
        return bumped, NO_PRODUCER_EPOCH
    if txn.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == txn.producer_epoch:
        return bumped, txn.producer_epoch
    if expected_epoch == txn.last_producer_epoch:
        return txn.producer_epoch, txn.last_producer_epoch
    return None

