"""The transaction coordinator's state machine: epochs and fencing, the commit and abort rounds,
timeouts, retries of markers, and failover from the `__transaction_state` records."""

from __future__ import annotations

import pytest

from gregor.coordinator.transaction import TransactionConfig, TxnResult
from gregor.coordinator.transaction.records import decode_key, decode_value
from gregor.protocol.error_codes import ErrorCode
from tests.unit.coordinator.transaction.harness import TXN, Driver

TP = ("orders", 0)
TP2 = ("orders", 1)
E = ErrorCode


def begun(driver: Driver) -> tuple[int, int]:
    result = driver.init()
    assert result is not None and result.error is E.NONE
    assert driver.add(result.producer_id, result.producer_epoch, TP, TP2) == TxnResult(E.NONE)
    return result.producer_id, result.producer_epoch


def test_init_gives_epoch_zero_then_bumps_and_persists_kafka_records():
    driver = Driver()
    first = driver.init()
    assert first == TxnResult(E.NONE, 1000, 0)
    assert driver.init() == TxnResult(E.NONE, 1000, 1)
    assert decode_key(driver.log[-1][0]) == TXN
    value = decode_value(driver.log[-1][1])
    assert (value.producer_id, value.producer_epoch, value.state.display_name, value.partitions) == (
        1000, 1, "Empty", frozenset())


def test_bad_input_gets_kafka_errors():
    driver = Driver(TransactionConfig(transaction_state_log_num_partitions=1, transaction_max_timeout_ms=1000))
    assert driver.init(timeout_ms=1001).error is E.INVALID_TRANSACTION_TIMEOUT
    assert driver.init(timeout_ms=0).error is E.INVALID_TRANSACTION_TIMEOUT
    assert driver.init(txn="", timeout_ms=10).error is E.INVALID_REQUEST
    assert driver.init(timeout_ms=10, producer_id=5, producer_epoch=-1).error is E.INVALID_REQUEST
    assert driver.add(1, 0, TP, txn="unknown").error is E.INVALID_PRODUCER_ID_MAPPING
    assert driver.end(1, 0, True, txn="unknown").error is E.INVALID_PRODUCER_ID_MAPPING
    pid = driver.init(timeout_ms=10).producer_id
    assert driver.end(pid, 0, True).error is E.INVALID_TXN_STATE  # nothing to commit


def test_commit_round_prepare_answer_markers_complete():
    driver = Driver()
    pid, epoch = begun(driver)
    assert driver.state() == "Ongoing"
    assert driver.add(pid, epoch, TP) == TxnResult(E.NONE)  # already in: nothing written
    written = len(driver.log)
    assert driver.end(pid, epoch, True) == TxnResult(E.NONE)
    assert driver.state() == "PrepareCommit" and len(driver.log) == written + 1
    (marker,) = driver.markers
    assert (marker.commit, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch) == (True, pid, epoch, 1)
    assert set(marker.partitions) == {TP, TP2}
    assert driver.end(pid, epoch, True).error is E.CONCURRENT_TRANSACTIONS
    assert driver.add(pid, epoch, TP).error is E.CONCURRENT_TRANSACTIONS
    driver.ack_markers()
    assert driver.state() == "CompleteCommit"
    assert decode_value(driver.log[-1][1]).partitions == frozenset()
    assert driver.end(pid, epoch, True) == TxnResult(E.NONE)  # a retried commit
    assert driver.end(pid, epoch, False).error is E.INVALID_TXN_STATE


def test_abort_and_next_transaction():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.end(pid, epoch, False)
    assert driver.markers[0].commit is False
    driver.ack_markers()
    assert driver.state() == "CompleteAbort"
    assert driver.add(pid, epoch, TP) == TxnResult(E.NONE)
    assert driver.state() == "Ongoing"


def test_markers_retried_until_written_and_fenced_markers_stop():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.end(pid, epoch, True)
    first = driver.markers[0]
    driver.apply(driver.coordinator.markers_written(
        first.marker_id, {TP: E.NONE, TP2: E.NOT_LEADER_OR_FOLLOWER}, driver.now_ms))
    driver.markers.clear()
    assert driver.coordinator.next_deadline() == driver.now_ms + 100
    driver.advance(100)
    (retry,) = driver.markers
    assert retry.partitions == (TP2,)
    driver.apply(driver.coordinator.markers_written(first.marker_id, {TP2: E.NONE}, driver.now_ms))  # stale
    assert driver.state() == "PrepareCommit"
    driver.ack_markers()
    assert driver.state() == "CompleteCommit"


def test_producer_fenced_by_a_new_init_and_stale_epochs():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.end(pid, epoch, True)
    driver.ack_markers()
    newer = driver.init()
    assert newer == TxnResult(E.NONE, pid, epoch + 1)
    assert driver.add(pid, epoch, TP).error is E.PRODUCER_FENCED
    assert driver.end(pid, epoch, True).error is E.PRODUCER_FENCED


def test_init_during_ongoing_transaction_fences_aborts_then_retry_succeeds():
    """A crashed producer's transaction is aborted by its successor's InitProducerId."""
    driver = Driver()
    pid, epoch = begun(driver)
    assert driver.init() == TxnResult(E.CONCURRENT_TRANSACTIONS)
    assert driver.state() == "PrepareAbort"
    (marker,) = driver.markers
    assert (marker.commit, marker.producer_epoch) == (False, epoch + 1)  # fenced epoch on the markers
    assert driver.init().error is E.CONCURRENT_TRANSACTIONS  # still aborting
    assert driver.end(pid, epoch, True).error is E.PRODUCER_FENCED  # the zombie cannot commit
    driver.ack_markers()
    assert driver.state() == "CompleteAbort"
    assert driver.init() == TxnResult(E.NONE, pid, epoch + 2)


def test_kip360_recovery_with_current_id_and_epoch():
    driver = Driver()
    first = driver.init()
    again = driver.init(producer_id=first.producer_id, producer_epoch=first.producer_epoch)
    assert again == TxnResult(E.NONE, first.producer_id, first.producer_epoch + 1)
    assert driver.init(producer_id=first.producer_id, producer_epoch=first.producer_epoch) == again  # a retry
    assert driver.init(producer_id=first.producer_id, producer_epoch=1) == TxnResult(E.NONE, first.producer_id, 2)
    stale = driver.init(producer_id=first.producer_id, producer_epoch=0)  # neither current nor last
    assert stale is not None and stale.error is E.PRODUCER_FENCED


def test_epoch_exhaustion_rotates_producer_id():
    driver = Driver()
    first = driver.init()
    driver.coordinator.transaction(TXN).producer_epoch = 32766
    rotated = driver.init()
    assert rotated == TxnResult(E.NONE, first.producer_id + 1, 0)


def test_timed_out_transaction_is_aborted_with_a_fenced_epoch():
    config = TransactionConfig(transaction_state_log_num_partitions=1,
                               transaction_abort_timed_out_transaction_cleanup_interval_ms=1000)
    driver = Driver(config)
    result = driver.init(timeout_ms=5000)
    pid, epoch = result.producer_id, result.producer_epoch
    driver.add(pid, epoch, TP)
    driver.advance(1000)
    assert driver.state() == "Ongoing" and not driver.markers
    driver.advance(5000)
    assert driver.state() == "PrepareAbort"
    assert driver.markers[0].producer_epoch == epoch + 1
    driver.ack_markers()
    assert driver.state() == "CompleteAbort"
    assert driver.add(pid, epoch, TP).error is E.PRODUCER_FENCED
    assert driver.end(pid, epoch, True).error is E.PRODUCER_FENCED


def test_failed_write_leaves_state_unchanged_and_maps_errors():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.fail_appends = E.NOT_ENOUGH_REPLICAS
    assert driver.end(pid, epoch, True).error is E.COORDINATOR_NOT_AVAILABLE
    assert driver.state() == "Ongoing"
    driver.fail_appends = E.NOT_LEADER_OR_FOLLOWER
    assert driver.add(pid, epoch, ("other", 0)).error is E.NOT_COORDINATOR
    assert driver.coordinator.transaction(TXN).partitions == {TP, TP2}


def test_pending_write_makes_others_wait():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.hold_appends = True
    assert driver.end(pid, epoch, True) is None  # parked on the write
    assert driver.add(pid, epoch, TP).error is E.CONCURRENT_TRANSACTIONS
    assert driver.init().error is E.CONCURRENT_TRANSACTIONS
    driver.hold_appends = False
    driver.release()
    assert driver.state() == "PrepareCommit"


def test_failover_completes_prepared_commit_and_keeps_epochs():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.end(pid, epoch, True)
    driver.markers.clear()  # the old coordinator dies before its markers are written
    new = driver.failover(coordinator_epoch=7)
    assert new.state() == "PrepareCommit"
    (marker,) = new.markers
    assert (marker.commit, marker.coordinator_epoch, set(marker.partitions)) == (True, 7, {TP, TP2})
    new.ack_markers()
    assert new.state() == "CompleteCommit"
    assert new.init() == TxnResult(E.NONE, pid, epoch + 1)


def test_failover_of_ongoing_transaction_then_timeout_abort():
    config = TransactionConfig(transaction_state_log_num_partitions=1,
                               transaction_abort_timed_out_transaction_cleanup_interval_ms=1000)
    driver = Driver(config)
    result = driver.init(timeout_ms=2000)
    driver.add(result.producer_id, result.producer_epoch, TP)
    new = driver.failover()
    assert new.state() == "Ongoing" and not new.markers
    new.advance(3000)
    assert new.state() == "PrepareAbort"


def test_unload_answers_not_coordinator_and_forgets():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.hold_appends = True
    token_result = driver.end(pid, epoch, True)
    assert token_result is None
    driver.apply(driver.coordinator.unload_partition(0, driver.now_ms))
    driver.hold_appends = False
    driver.release()
    assert list(driver.answers.values())[-1].error is E.NOT_COORDINATOR
    assert driver.init().error is E.NOT_COORDINATOR
    assert driver.coordinator.next_deadline() is None


def test_load_in_progress():
    driver = Driver()
    driver.coordinator.begin_load(0)
    assert driver.init().error is E.COORDINATOR_LOAD_IN_PROGRESS
    assert driver.coordinator.list_transactions(now_ms=0).error is E.COORDINATOR_LOAD_IN_PROGRESS


def test_verify_only():
    driver = Driver()
    pid, epoch = begun(driver)
    verify = driver.coordinator.verify_partitions
    assert verify(transactional_id=TXN, producer_id=pid, producer_epoch=epoch, partitions=[TP, ("x", 0)]) == {
        TP: E.NONE, ("x", 0): E.INVALID_TXN_STATE}
    assert verify(transactional_id=TXN, producer_id=pid, producer_epoch=epoch - 1, partitions=[TP]) == {
        TP: E.PRODUCER_FENCED}


def test_describe_and_list():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.init(txn="idle")
    (described, missing) = driver.coordinator.describe([TXN, "nope"])
    assert (described.state, described.producer_id, described.partitions) == ("Ongoing", pid, (TP, TP2))
    assert described.start_ms == driver.now_ms
    assert missing.error is E.TRANSACTIONAL_ID_NOT_FOUND
    listing = driver.coordinator.list_transactions(states=["Ongoing", "Bogus"], now_ms=driver.now_ms)
    assert [t.transactional_id for t in listing.transactions] == [TXN]
    assert listing.unknown_state_filters == ("Bogus",)
    assert {t.transactional_id for t in driver.coordinator.list_transactions(now_ms=0).transactions} == {TXN, "idle"}
    by_pid = driver.coordinator.list_transactions(producer_ids=[pid + 1], now_ms=0)
    assert [t.transactional_id for t in by_pid.transactions] == ["idle"]
    assert not driver.coordinator.list_transactions(duration_ms=10, now_ms=driver.now_ms).transactions
    assert driver.coordinator.list_transactions(duration_ms=10, now_ms=driver.now_ms + 10).transactions


def test_protocol_v2_bumps_epoch_on_every_end_and_recognises_retries():
    driver = Driver()
    pid, epoch = begun(driver)
    committed = driver.end(pid, epoch, True, epoch_bump=True, new_producer_id=driver.new_pid)
    assert committed == TxnResult(E.NONE, pid, epoch + 1)
    assert driver.markers[0].producer_epoch == epoch + 1
    driver.ack_markers()
    assert driver.end(pid, epoch, True, epoch_bump=True) == TxnResult(E.NONE, pid, epoch + 1)  # retry
    assert driver.add(pid, epoch, TP).error is E.PRODUCER_FENCED  # a late write of the old transaction
    aborted = driver.end(pid, epoch + 1, False, epoch_bump=True)  # abort with nothing added
    assert aborted == TxnResult(E.NONE, pid, epoch + 2)
    assert driver.state() == "CompleteAbort" and not driver.markers
    assert driver.end(pid, epoch + 2, True, epoch_bump=True).error is E.INVALID_TXN_STATE


def test_protocol_v2_exhausted_epoch_moves_to_next_producer_id():
    driver = Driver()
    pid, _ = begun(driver)
    driver.coordinator.transaction(TXN).producer_epoch = 32765
    result = driver.end(pid, 32765, True, epoch_bump=True, new_producer_id=driver.new_pid)
    assert result == TxnResult(E.NONE, pid + 1, 0)
    driver.ack_markers()
    assert driver.coordinator.transaction(TXN).producer_id == pid + 1
    assert driver.add(pid + 1, 0, TP) == TxnResult(E.NONE)


@pytest.mark.parametrize("state_id", range(8))
def test_every_state_round_trips_through_records(state_id):
    from gregor.coordinator.transaction.records import TransactionRecord, encode_value
    from gregor.coordinator.transaction.state import TransactionState
    state = TransactionState.from_id(state_id)
    partitions = frozenset() if state is TransactionState.EMPTY else frozenset({TP, ("b", 3)})
    for version in (0, 2):
        record = TransactionRecord(7, 3, 60000, state, partitions, 5, 4, -1, -1, version)
        assert decode_value(encode_value(record)) == record


def test_an_idle_transactional_id_expires_with_a_tombstone_and_a_busy_one_does_not():
    config = TransactionConfig(transaction_state_log_num_partitions=1, transactional_id_expiration_ms=10_000,
                               transaction_remove_expired_transaction_cleanup_interval_ms=1_000,
                               transaction_abort_timed_out_transaction_cleanup_interval_ms=100_000)
    driver = Driver(config)
    idle = driver.init(txn="idle")
    busy = driver.init(txn="busy", timeout_ms=900_000)
    driver.add(busy.producer_id, busy.producer_epoch, TP, txn="busy")
    driver.advance(9_000)
    assert driver.coordinator.transaction("idle") is not None
    driver.advance(2_000)
    assert driver.coordinator.transaction("idle") is None and driver.coordinator.expired == 1
    assert driver.log[-1] == (driver.log[0][0], None)  # the tombstone, under idle's key
    assert decode_key(driver.log[-1][0]) == "idle"
    assert driver.state("busy") == "Ongoing"  # a transaction in progress never expires
    (described,) = driver.coordinator.describe(["idle"])
    assert described.error is E.TRANSACTIONAL_ID_NOT_FOUND
    assert driver.failover().coordinator.transaction("idle") is None  # the tombstone survives a reload
    again = driver.init(txn="idle")
    assert again.error is E.NONE and again.producer_id != idle.producer_id


def test_completed_transactions_are_counted_by_outcome():
    driver = Driver()
    pid, epoch = begun(driver)
    driver.end(pid, epoch, True)
    driver.ack_markers()
    driver.add(pid, epoch, TP)
    driver.end(pid, epoch, False)
    assert driver.coordinator.completed == {"CompleteCommit": 1}  # the abort not before its markers are written
    driver.ack_markers()
    assert driver.coordinator.completed == {"CompleteCommit": 1, "CompleteAbort": 1}
