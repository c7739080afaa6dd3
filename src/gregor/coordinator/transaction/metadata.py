"""One transactional id's state in the coordinator's cache (Kafka's TransactionMetadata).

Every change is made in two steps, as in Kafka: `prepare_*` builds the `TransactionRecord` to
write and marks it pending (requests meanwhile get CONCURRENT_TRANSACTIONS), and
`complete_transition` applies it once `__transaction_state` has it, or `abort_transition`
forgets it when the write failed. The cache therefore only ever holds what the log holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gregor.coordinator.transaction.records import TopicPartition, TransactionRecord
from gregor.coordinator.transaction.state import COMPLETED, PREVIOUS, TransactionState

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MAX_VALUE


def epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch for fencing: a producer at MAX_EPOCH - 1 needs a new producer id."""
    return epoch >= MAX_EPOCH - 1


class IllegalTransition(Exception):
    """A move the state table does not allow: a coordinator bug, never a client's doing."""


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    client_transaction_version: int = 0
    pending: TransactionRecord | None = None
    #: `last_producer_epoch` once the pending record is written (it is not part of the record).
    pending_last_epoch: int | None = None
    #: An epoch fence (a crashed producer's transaction aborted by InitProducerId or a timeout)
    #: whose write failed: the next fence reuses the epoch instead of bumping it again.
    failed_epoch_fence: bool = False

    @staticmethod
    def from_record(transactional_id: str, record: TransactionRecord) -> TransactionMetadata:
        return TransactionMetadata(
            transactional_id, record.producer_id, record.producer_epoch, record.timeout_ms, record.state,
            set(record.partitions), record.start_ms, record.last_update_ms, record.previous_producer_id,
            record.next_producer_id, client_transaction_version=record.client_transaction_version)

    def record(self) -> TransactionRecord:
        return TransactionRecord(
            self.producer_id, self.producer_epoch, self.timeout_ms, self.state, frozenset(self.partitions),
            self.last_update_ms, self.start_ms, self.previous_producer_id, self.next_producer_id,
            self.client_transaction_version)

    @property
    def pending_transition(self) -> bool:
        return self.pending is not None

    def _prepare(self, record: TransactionRecord, last_epoch: int | None = None) -> TransactionRecord:
        if self.pending is not None:
            raise IllegalTransition(f"{self.transactional_id}: a transition to {self.pending.state.display_name} "
                                    f"is already pending")
        if self.state not in PREVIOUS[record.state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.display_name} -> "
                                    f"{record.state.display_name} is not a legal transition")
        self.pending = record
        self.pending_last_epoch = last_epoch
        return record

    # -- the transitions

    def prepare_epoch_bump(self, timeout_ms: int, new_epoch: int, last_epoch: int, now_ms: int) -> TransactionRecord:
        """InitProducerId on a completed transaction: the same producer id, `new_epoch`."""
        return self._prepare(replace(self.record(), producer_epoch=new_epoch, timeout_ms=timeout_ms,
                                     state=TransactionState.EMPTY, partitions=frozenset(), start_ms=-1,
                                     last_update_ms=now_ms), last_epoch)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     recovering: bool) -> TransactionRecord:
        """InitProducerId when the epoch is exhausted (or the id is new): epoch 0 of a new id.
        `recovering` (KIP-360: the producer named its id and epoch) keeps the old id as the
        previous one so that a retry of this request is recognised."""
        return self._prepare(replace(
            self.record(), producer_id=new_producer_id, producer_epoch=0, timeout_ms=timeout_ms,
            state=TransactionState.EMPTY, partitions=frozenset(), start_ms=-1, last_update_ms=now_ms,
            previous_producer_id=self.producer_id if recovering else NO_PRODUCER_ID), NO_PRODUCER_EPOCH)

    def prepare_add_partitions(self, partitions: set[TopicPartition], now_ms: int) -> TransactionRecord:
        start = now_ms if self.state in COMPLETED else self.start_ms
        return self._prepare(replace(self.record(), state=TransactionState.ONGOING,
                                     partitions=frozenset(self.partitions | partitions),
                                     start_ms=start, last_update_ms=now_ms))

    def prepare_end(self, commit: bool, now_ms: int, epoch: int | None = None, *,
                    transaction_version: int | None = None,
                    next_producer_id: int = NO_PRODUCER_ID) -> TransactionRecord:
        """PrepareCommit / PrepareAbort; `epoch` is the epoch the markers carry when it changes
        (an epoch fence, or protocol v2's bump on every EndTxn). Under protocol v2 an exhausted
        epoch names the `next_producer_id` the transactional id moves to once complete."""
        state = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
        producer_epoch = self.producer_epoch if epoch is None else epoch
        start = now_ms if self.state in COMPLETED else self.start_ms
        last_epoch = None if producer_epoch == self.producer_epoch else self.producer_epoch
        version = self.client_transaction_version if transaction_version is None else transaction_version
        return self._prepare(replace(self.record(), state=state, producer_epoch=producer_epoch, start_ms=start,
                                     last_update_ms=now_ms, client_transaction_version=version,
                                     next_producer_id=next_producer_id), last_epoch)

    def prepare_complete(self, now_ms: int) -> TransactionRecord:
        """CompleteCommit / CompleteAbort once every marker is written; the partitions go. With a
        next producer id (protocol v2 after the last epoch) the id moves to it, at epoch 0."""
        state = (TransactionState.COMPLETE_COMMIT if self.state is TransactionState.PREPARE_COMMIT
                 else TransactionState.COMPLETE_ABORT)
        record = replace(self.record(), state=state, partitions=frozenset(), last_update_ms=now_ms)
        if self.next_producer_id == NO_PRODUCER_ID:
            return self._prepare(record)
        return self._prepare(replace(record, previous_producer_id=self.producer_id, producer_id=self.next_producer_id,
                                     producer_epoch=0, next_producer_id=NO_PRODUCER_ID), NO_PRODUCER_EPOCH)

    def prepare_dead(self, now_ms: int) -> TransactionRecord:
        """An expired transactional id (transactional.id.expiration.ms): its tombstone is written."""
        return self._prepare(replace(self.record(), state=TransactionState.DEAD, partitions=frozenset(),
                                     last_update_ms=now_ms))

    def complete_transition(self) -> None:
        record = self.pending
        if record is None:
            raise IllegalTransition(f"{self.transactional_id}: no transition is pending")
        self.pending = None
        if self.pending_last_epoch is not None:
            self.last_producer_epoch = self.pending_last_epoch
            self.pending_last_epoch = None
        self.producer_id = record.producer_id
        self.producer_epoch = record.producer_epoch
        self.timeout_ms = record.timeout_ms
        self.state = record.state
        self.partitions = set(record.partitions)
        self.start_ms = record.start_ms
        self.last_update_ms = record.last_update_ms
        self.previous_producer_id = record.previous_producer_id
        self.next_producer_id = record.next_producer_id
        self.client_transaction_version = record.client_transaction_version
        self.failed_epoch_fence = False

    def abort_transition(self) -> None:
        self.pending = None
        self.pending_last_epoch = None
