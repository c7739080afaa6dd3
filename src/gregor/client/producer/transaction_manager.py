"""The transactional producer's state machine (Java's TransactionManager), without I/O.

It says which call is legal now, which partitions must join the transaction (AddPartitionsToTxn)
before a batch for them may be sent, and what a coordinator's error code means. The requests
themselves are sent by `transaction_requests` (the API calls) and the `Sender` (partitions).

States and the calls that move between them (Java's names):

    UNINITIALIZED --init_transactions--> INITIALIZING --InitProducerId--> READY
    READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction--> COMMITTING_TRANSACTION --EndTxn--> READY
    IN_TRANSACTION | ABORTABLE_ERROR --abort_transaction--> ABORTING_TRANSACTION --EndTxn--> READY
    IN_TRANSACTION | COMMITTING_TRANSACTION --abortable error--> ABORTABLE_ERROR
    any --fatal error (fenced, not authorized, ...)--> FATAL_ERROR (only close() is left)
    UNINITIALIZED --resume_transaction--> IN_TRANSACTION (commit or abort only; see below)

An abort that must bump the epoch (KIP-360: a sequence gap, UNKNOWN_PRODUCER_ID) ends the
transaction with InitProducerId(transactional id, producer id, epoch) instead of EndTxn: the
coordinator aborts it and answers with the next epoch, so the producer goes on without a gap.
A call that ran out of time leaves the state as it was, so the same call can be made again.

Two-phase commit across processes (what Flink's Kafka sink does, and the Spark exactly-once sink):
one producer writes and flushes, hands its `TransactionHandle` (transactional id, producer id,
epoch) to another process and is closed without ending the transaction; there a producer with the
same transactional id is `resume`d from UNINITIALIZED straight into IN_TRANSACTION, and can only
commit or abort it (EndTxn under the handle's id and epoch).
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import Iterable

from gregor.client.errors import ClientErrorCode, IllegalStateError, KafkaException, transaction_error
from gregor.client.network import TopicPartition
from gregor.protocol.error_codes import ErrorCode


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


S = TxnState
#: The states each state may be entered from (FATAL_ERROR may be entered from any).
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.INITIALIZING, S.ABORTING_TRANSACTION}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.COMMITTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.COMMITTING_TRANSACTION}),
    S.ABORTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR, S.ABORTING_TRANSACTION}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR}),
    S.FATAL_ERROR: frozenset(TxnState),
}


@dataclass(frozen=True)
class TransactionHandle:
    """What another process needs to commit or abort a producer's open transaction."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


class Outcome(enum.Enum):
    """What an error code from a transactional request means."""

    RETRY = "retry"                    # ask again after the retry backoff
    COORDINATOR_MOVED = "moved"        # find the coordinator again, then ask again
    ABORTABLE = "abortable"            # this transaction cannot commit
    ABORTABLE_BUMP = "abortable-bump"  # ... and its abort must bump the epoch (KIP-360)
    FENCED = "fenced"                  # another producer took the transactional id: fatal
    FATAL = "fatal"                    # anything else the Java client treats as fatal


_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_RETRY = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.REQUEST_TIMED_OUT,
                    ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.NETWORK_EXCEPTION})
_FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})
_ABORTABLE = frozenset({ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_MEMBER_ID,
                        ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID,
                        ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.INVALID_RECORD})
_BUMP = frozenset({ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                   ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})


def classify(code: int) -> Outcome:
    """The meaning of a coordinator's (or, for TxnOffsetCommit, a group coordinator's) error."""
    if code in _MOVED:
        return Outcome.COORDINATOR_MOVED
    if code in _RETRY:
        return Outcome.RETRY
    if code in _FENCED:
        return Outcome.FENCED
    if code in _ABORTABLE:
        return Outcome.ABORTABLE
    if code in _BUMP:
        return Outcome.ABORTABLE_BUMP
    return Outcome.FATAL


class TransactionManager:
    """One transactional producer's state; its methods are called from the application's threads
    (the API) and from the network loop (responses), so each holds the lock."""

    def __init__(self, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self.state = TxnState.UNINITIALIZED
        self.last_error: KafkaException | None = None
        self.epoch_bump_required = False
        #: Whether AddPartitionsToTxn or AddOffsetsToTxn succeeded: only then is there an EndTxn to send.
        self.transaction_started = False
        self._in_transaction: set[TopicPartition] = set()
        self._pending: set[TopicPartition] = set()
        self._resumed = False
        self._lock = threading.Lock()

    # -- the API's calls --

    def begin_init(self) -> None:
        with self._lock:
            self._transition("init_transactions", TxnState.INITIALIZING)

    def begin_transaction(self) -> None:
        with self._lock:
            self._transition("begin_transaction", TxnState.IN_TRANSACTION)
            self._in_transaction.clear()
            self._pending.clear()
            self.transaction_started = False

    def resume(self) -> None:
        """Take over a transaction another producer left open (see the module doc)."""
        with self._lock:
            if self.state is not TxnState.UNINITIALIZED:
                raise _illegal(f"cannot resume_transaction in state {self.state.value}: only a new producer can")
            self.state = TxnState.IN_TRANSACTION
            self.transaction_started = True
            self._resumed = True

    def check_send(self) -> None:
        """Raise unless a record may be sent now (inside a transaction without an error)."""
        state = self.state
        if state is TxnState.IN_TRANSACTION and not self._resumed:
            return
        if self._resumed and state is TxnState.IN_TRANSACTION:
            raise _illegal("cannot send in a resumed transaction: it can only be committed or aborted")
        with self._lock:
            self._raise_failed("send")
            raise _illegal(_state_message("send", self.state))

    def check_in_transaction(self, call: str) -> None:
        with self._lock:
            if self.state is not TxnState.IN_TRANSACTION:
                self._raise_failed(call)
                raise _illegal(_state_message(call, self.state))

    def begin_commit(self) -> None:
        with self._lock:
            self._raise_failed("commit_transaction")
            self._transition("commit_transaction", TxnState.COMMITTING_TRANSACTION)

    def begin_abort(self) -> None:
        with self._lock:
            if self.state is TxnState.FATAL_ERROR:
                self._raise_failed("abort_transaction")
            self._transition("abort_transaction", TxnState.ABORTING_TRANSACTION)

    # -- partitions joining the transaction --

    def add_partition(self, topic_partition: TopicPartition) -> None:
        """A record goes to this partition: it must join the transaction before its batch is sent."""
        if topic_partition not in self._in_transaction:
            with self._lock:
                if topic_partition not in self._in_transaction:
                    self._pending.add(topic_partition)

    def is_sendable(self, topic_partition: TopicPartition) -> bool:
        """Whether the partition's batches may be sent (it is in the transaction)."""
        return topic_partition in self._in_transaction

    def pending_partitions(self) -> list[TopicPartition]:
        with self._lock:
            if self.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING_TRANSACTION):
                return []
            return sorted(self._pending)

    def partitions_added(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for topic_partition in partitions:
                self._pending.discard(topic_partition)
                self._in_transaction.add(topic_partition)
                self.transaction_started = True

    def offsets_added(self) -> None:
        with self._lock:
            self.transaction_started = True

    @property
    def failed(self) -> bool:
        """Whether batches still queued must be failed (the transaction cannot commit)."""
        return self.state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR, TxnState.ABORTING_TRANSACTION)

    # -- outcomes --

    def initialized(self) -> None:
        with self._lock:
            self.epoch_bump_required = False
            self._transition("InitProducerId", TxnState.READY)
            self._reset_transaction()

    def completed(self) -> None:
        """EndTxn (or the epoch-bumping InitProducerId of an abort) succeeded."""
        with self._lock:
            self._transition("EndTxn", TxnState.READY)
            self._reset_transaction()
            self.last_error = None

    def fail(self, code: int, message: str, outcome: Outcome) -> KafkaException:
        """Record an error's effect on the state and return the exception to raise for it."""
        with self._lock:
            if outcome in (Outcome.FENCED, Outcome.FATAL) or self.state in (TxnState.INITIALIZING,
                                                                              TxnState.UNINITIALIZED):
                return self._fatal(code, message)
            error = transaction_error(code, message, abortable=True)
            if outcome is Outcome.ABORTABLE_BUMP:
                self.epoch_bump_required = True
            if self.state in TRANSITIONS[TxnState.ABORTABLE_ERROR]:
                self.state = TxnState.ABORTABLE_ERROR
                self.last_error = error
            return error

    def batch_failed(self, error: KafkaException, sequenced: bool) -> None:
        """A batch of the transaction failed: it cannot commit; a gap in sequences needs a new epoch."""
        with self._lock:
            if self.state is TxnState.FATAL_ERROR:
                return
            if error.code == ErrorCode.PRODUCER_FENCED or error.code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                self._fatal(error.code, str(error.error.message))
                return
            if sequenced:
                self.epoch_bump_required = True
            if self.state in TRANSITIONS[TxnState.ABORTABLE_ERROR]:
                self.state = TxnState.ABORTABLE_ERROR
                self.last_error = error if error.error.txn_requires_abort else transaction_error(
                    error.code, f"a record of the transaction failed: {error.error.message}", abortable=True)

    def _fatal(self, code: int, message: str) -> KafkaException:
        error = transaction_error(code, message, fatal=True)
        self.state = TxnState.FATAL_ERROR
        self.last_error = error
        return error

    # -- helpers (the lock is held) --

    def _transition(self, call: str, target: TxnState) -> None:
        if self.state not in TRANSITIONS[target]:
            self._raise_failed(call)
            raise _illegal(_state_message(call, self.state))
        self.state = target

    def _raise_failed(self, call: str) -> None:
        error = self.last_error
        if error is None:
            return
        if self.state is TxnState.FATAL_ERROR:
            raise type(error)(error.error)
        if self.state is TxnState.ABORTABLE_ERROR:
            raise type(error)(error.error.__class__(
                code=error.code, name=error.name, retriable=False, fatal=False, txn_requires_abort=True,
                message=f"cannot {call}: the transaction must be aborted ({error.error.message})"))

    def _reset_transaction(self) -> None:
        self._resumed = False
        self._in_transaction.clear()
        self._pending.clear()
        self.transaction_started = False


def _state_message(call: str, state: TxnState) -> str:
    hint = {
        TxnState.UNINITIALIZED: "call init_transactions() first",
        TxnState.READY: "call begin_transaction() first",
        TxnState.IN_TRANSACTION: "a transaction is already in progress",
        TxnState.COMMITTING_TRANSACTION: "the transaction is being committed; call commit_transaction() again",
        TxnState.ABORTING_TRANSACTION: "the transaction is being aborted; call abort_transaction() again",
        TxnState.INITIALIZING: "init_transactions() has not completed; call it again",
    }.get(state, "")
    return f"cannot {call} in state {state.value}" + (f": {hint}" if hint else "")


def _illegal(message: str) -> IllegalStateError:
    return IllegalStateError(ClientErrorCode._STATE, message)
