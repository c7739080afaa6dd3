"""The transactional producer's state machine without I/O: which call is legal in which state,
which partitions wait for AddPartitionsToTxn, and how errors are classed (abortable, fatal)."""

from __future__ import annotations

import pytest

from gregor.client import (
    IllegalStateError, InvalidProducerEpochError, KafkaException, ProducerFencedError, TopicPartition,
    TransactionAbortableError,
)
from gregor.client.producer.transaction_manager import Outcome, TransactionManager, TxnState, classify
from gregor.protocol.error_codes import ErrorCode

TP = TopicPartition("t", 0)


def ready() -> TransactionManager:
    manager = TransactionManager("tx")
    manager.begin_init()
    manager.initialized()
    return manager


def test_calls_out_of_order_raise_illegal_state_naming_the_state():
    manager = TransactionManager("tx")
    for call in (manager.begin_transaction, manager.begin_commit, manager.begin_abort, manager.check_send):
        with pytest.raises(IllegalStateError, match="UNINITIALIZED: call init_transactions"):
            call()
    manager = ready()
    with pytest.raises(IllegalStateError, match="send in state READY: call begin_transaction"):
        manager.check_send()
    manager.begin_transaction()
    with pytest.raises(IllegalStateError, match="already in progress"):
        manager.begin_transaction()
    with pytest.raises(IllegalStateError):
        manager.begin_init()


def test_partitions_are_sendable_only_once_added_and_the_transaction_starts_with_them():
    manager = ready()
    manager.begin_transaction()
    manager.add_partition(TP)
    assert manager.pending_partitions() == [TP] and not manager.is_sendable(TP)
    assert not manager.transaction_started
    manager.partitions_added([TP])
    assert manager.pending_partitions() == [] and manager.is_sendable(TP) and manager.transaction_started
    manager.begin_commit()
    manager.completed()
    assert manager.state is TxnState.READY and not manager.is_sendable(TP) and not manager.transaction_started


def test_an_abortable_error_allows_only_abort_and_a_sequence_gap_asks_for_an_epoch_bump():
    manager = ready()
    manager.begin_transaction()
    manager.batch_failed(InvalidProducerEpochError(ErrorCode.INVALID_PRODUCER_EPOCH, "old epoch"), sequenced=True)
    assert manager.state is TxnState.ABORTABLE_ERROR and manager.epoch_bump_required and manager.failed
    for call in (manager.check_send, manager.begin_commit):
        with pytest.raises(InvalidProducerEpochError, match="must be aborted") as raised:
            call()
        assert raised.value.error.txn_requires_abort and not raised.value.retriable
    manager.begin_abort()
    manager.initialized()  # the abort's InitProducerId with the old id and epoch
    assert manager.state is TxnState.READY and not manager.epoch_bump_required
    manager.begin_transaction()


def test_a_failed_record_makes_commit_raise_transaction_abortable():
    manager = ready()
    manager.begin_transaction()
    manager.begin_commit()
    manager.batch_failed(KafkaException(ErrorCode.MESSAGE_TOO_LARGE, "t-0"), sequenced=False)
    with pytest.raises(TransactionAbortableError, match="MESSAGE_TOO_LARGE"):
        manager.begin_commit()


def test_fencing_is_fatal_for_every_later_call():
    manager = ready()
    manager.begin_transaction()
    error = manager.fail(ErrorCode.INVALID_PRODUCER_EPOCH, "EndTxn", classify(ErrorCode.INVALID_PRODUCER_EPOCH))
    assert isinstance(error, ProducerFencedError) and error.error.fatal
    assert manager.state is TxnState.FATAL_ERROR
    for call in (manager.begin_transaction, manager.begin_commit, manager.begin_abort, manager.check_send):
        with pytest.raises(ProducerFencedError):
            call()


@pytest.mark.parametrize("code, outcome", [
    (ErrorCode.NOT_COORDINATOR, Outcome.COORDINATOR_MOVED),
    (ErrorCode.CONCURRENT_TRANSACTIONS, Outcome.RETRY),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, Outcome.RETRY),
    (ErrorCode.PRODUCER_FENCED, Outcome.FENCED),
    (ErrorCode.TRANSACTION_ABORTABLE, Outcome.ABORTABLE),
    (ErrorCode.ILLEGAL_GENERATION, Outcome.ABORTABLE),
    (ErrorCode.UNKNOWN_PRODUCER_ID, Outcome.ABORTABLE_BUMP),
    (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Outcome.FATAL),
    (ErrorCode.INVALID_TXN_STATE, Outcome.FATAL),
])
def test_coordinator_errors_are_classed_as_the_java_client_does(code, outcome):
    assert classify(code) is outcome
