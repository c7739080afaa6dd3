"""The consumer's record collection without a broker: synthetic fetch answers built with
gregor.records (v2 batches, transactions and their markers, legacy message sets) go through
CompletedFetch and Fetcher.collect as a Fetch response would."""

from __future__ import annotations

import struct

import pytest

from gregor.client.consumer.fetcher import (
    READ_COMMITTED, READ_UNCOMMITTED, CompletedFetch, FetchSettings, Fetcher, RecordDeserializationError,
)
from gregor.client.consumer.records import ConsumerRecord, ConsumerRecords
from gregor.client.consumer.subscription import SubscriptionState
from gregor.client.errors import KafkaException
from gregor.client.network import TopicPartition
from gregor.client.serialization import resolve_deserializer
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchResponse
from gregor.records.compression import Compression
from gregor.records.legacy import build_legacy
from gregor.records.record import CONTROL_ABORT, CONTROL_COMMIT, BatchBuilder

TP = TopicPartition("t", 0)
SETTINGS = FetchSettings(min_bytes=1, max_bytes=50 * 1024 * 1024, max_wait_ms=500,
                         partition_max_bytes=1024 * 1024, isolation_level=READ_UNCOMMITTED, check_crcs=True,
                         request_timeout_ms=30_000)


def batch(base_offset: int, count: int, *, producer_id: int = -1, transactional: bool = False,
          compression: int = 0, leader_epoch: int = 3) -> bytes:
    builder = BatchBuilder(compression=compression, base_offset=base_offset, producer_id=producer_id,
                           producer_epoch=0 if producer_id >= 0 else -1, is_transactional=transactional,
                           base_sequence=0 if producer_id >= 0 else -1, partition_leader_epoch=leader_epoch)
    for offset in range(base_offset, base_offset + count):
        builder.append(1_000 + offset, b"k%d" % offset, b"v%d" % offset, [("h", b"%d" % offset)])
    return builder.build()


def marker(offset: int, producer_id: int, kind: int) -> bytes:
    builder = BatchBuilder(base_offset=offset, producer_id=producer_id, producer_epoch=0,
                           is_transactional=True, is_control=True)
    builder.append(5_000, struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 7))
    return builder.build()


def answer(records: bytes, *, aborted: list[tuple[int, int]] = (), error: int = ErrorCode.NONE
           ) -> FetchResponse.PartitionData:
    return FetchResponse.PartitionData(
        partition_index=TP.partition, error_code=error, high_watermark=100, last_stable_offset=100,
        log_start_offset=0, records=records,
        aborted_transactions=[FetchResponse.AbortedTransaction(producer_id=producer, first_offset=first)
                              for producer, first in aborted])


def taken(completed: CompletedFetch) -> list[ConsumerRecord]:
    """Every record `completed` hands over, one take at a time as Fetcher.collect does."""
    out = []
    while (records := completed.take_records(2)) is not None:
        out += records
    return out


def fetcher_at(position: int, reset: str = "earliest", key: str = "bytes", value: str = "bytes"
               ) -> tuple[Fetcher, SubscriptionState]:
    subscriptions = SubscriptionState(default_reset=reset)
    subscriptions.assign_from_user([TP])
    subscriptions.seek(TP, position)
    fetcher = Fetcher(None, subscriptions, SETTINGS, resolve_deserializer(key, "key.deserializer"),
                      resolve_deserializer(value, "value.deserializer"))
    return fetcher, subscriptions


def read(fetch_offset: int, data: FetchResponse.PartitionData, isolation: int = READ_UNCOMMITTED,
         check_crcs: bool = True) -> tuple[list[ConsumerRecord], int]:
    """What poll would hand over from one answer, and the position after it."""
    fetcher, subscriptions = fetcher_at(fetch_offset)
    fetcher.add([CompletedFetch(TP, fetch_offset, data, isolation, check_crcs)])
    records, error = fetcher.collect(10_000)
    if error is not None:
        raise error
    return records.get(TP, []), subscriptions.state(TP).position


def offsets(fetch_offset: int, data: FetchResponse.PartitionData, isolation: int = READ_UNCOMMITTED,
            check_crcs: bool = True) -> list[int]:
    return [record.offset for record in read(fetch_offset, data, isolation, check_crcs)[0]]


# -- transactions --

def test_read_committed_drops_an_aborted_transaction_and_keeps_a_committed_one():
    data = answer(batch(0, 2, producer_id=1, transactional=True) + marker(2, 1, CONTROL_ABORT)
                  + batch(3, 2, producer_id=2, transactional=True) + marker(5, 2, CONTROL_COMMIT),
                  aborted=[(1, 0)])
    assert offsets(0, data, READ_COMMITTED) == [3, 4]
    assert offsets(0, data, READ_UNCOMMITTED) == [0, 1, 3, 4]


def test_an_abort_marker_ends_the_abort_so_the_producers_next_transaction_is_read():
    data = answer(batch(0, 1, producer_id=1, transactional=True) + batch(1, 1, producer_id=2, transactional=True)
                  + marker(2, 1, CONTROL_ABORT) + batch(3, 1, producer_id=1, transactional=True)
                  + marker(4, 2, CONTROL_COMMIT) + marker(5, 1, CONTROL_COMMIT),
                  aborted=[(1, 0)])
    assert offsets(0, data, READ_COMMITTED) == [1, 3]


def test_aborted_transactions_starting_later_do_not_touch_earlier_batches():
    data = answer(batch(0, 2, producer_id=1, transactional=True) + marker(2, 1, CONTROL_COMMIT)
                  + batch(3, 2, producer_id=1, transactional=True) + marker(5, 1, CONTROL_ABORT),
                  aborted=[(1, 3)])
    assert offsets(0, data, READ_COMMITTED) == [0, 1]


def test_non_transactional_batches_are_read_under_read_committed():
    data = answer(batch(0, 2, producer_id=9) + batch(2, 2), aborted=[(9, 0)])
    assert offsets(0, data, READ_COMMITTED) == [0, 1, 2, 3]


def test_the_position_moves_past_trailing_control_and_aborted_batches():
    data = answer(batch(0, 1) + batch(1, 2, producer_id=1, transactional=True) + marker(3, 1, CONTROL_ABORT),
                  aborted=[(1, 1)])
    completed = CompletedFetch(TP, 0, data, READ_COMMITTED, True)
    assert [record.offset for record in taken(completed)] == [0]
    assert completed.next_offset == 4


# -- batches and message sets --

def test_records_before_the_fetch_offset_in_the_first_batch_are_skipped():
    assert offsets(4, answer(batch(0, 10) + batch(10, 2))) == [4, 5, 6, 7, 8, 9, 10, 11]


@pytest.mark.parametrize("codec", list(Compression))
def test_every_codec_is_decoded(codec):
    assert offsets(0, answer(batch(0, 5, compression=codec) + batch(5, 5, compression=codec))) == list(range(10))


def test_a_partial_batch_at_the_end_of_the_answer_is_left_for_the_next_fetch():
    full = batch(0, 3)
    completed = CompletedFetch(TP, 0, answer(full + batch(3, 3)[:40]), READ_UNCOMMITTED, True)
    assert [record.offset for record in taken(completed)] == [0, 1, 2]
    assert completed.next_offset == 3


def test_a_batch_failing_its_crc_is_corrupt_message_when_crcs_are_checked():
    damaged = bytearray(batch(0, 3))
    damaged[-1] ^= 0xFF
    with pytest.raises(KafkaException) as raised:
        offsets(0, answer(bytes(damaged)))
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE and "t-0" in str(raised.value)
    assert offsets(0, answer(bytes(damaged)), check_crcs=False) == [0, 1, 2]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_legacy_message_sets_are_read(magic, codec):
    legacy = build_legacy([(offset, 2_000 + offset, b"k%d" % offset, b"v%d" % offset) for offset in range(4)],
                          magic, codec)
    completed = CompletedFetch(TP, 1, answer(legacy + batch(4, 2)), READ_UNCOMMITTED, True)
    read = [(record.offset, record.key, record.value, record.timestamp) for record in taken(completed)]
    stamp = (lambda offset: 2_000 + offset) if magic == 1 else (lambda offset: -1)
    assert read[:3] == [(offset, b"k%d" % offset, b"v%d" % offset, stamp(offset)) for offset in range(1, 4)]
    assert [offset for offset, *_ in read[3:]] == [4, 5]


# -- Fetcher.collect --

def test_collect_hands_over_at_most_max_records_and_advances_the_position():
    fetcher, subscriptions = fetcher_at(0)
    fetcher.add([CompletedFetch(TP, 0, answer(batch(0, 5) + batch(5, 5)), READ_UNCOMMITTED, True)])
    first, error = fetcher.collect(4)
    assert error is None and [record.offset for record in first[TP]] == [0, 1, 2, 3]
    assert subscriptions.state(TP).position == 4
    rest, _ = fetcher.collect(100)
    assert [record.offset for record in rest[TP]] == [4, 5, 6, 7, 8, 9]
    assert subscriptions.state(TP).position == 10 and not fetcher.has_data()
    record = rest[TP][0]
    assert (record.key, record.value, record.headers, record.leader_epoch, record.timestamp) == (
        b"k4", b"v4", [("h", b"4")], 3, 1_004)
    assert (record.serialized_key_size, record.serialized_value_size) == (2, 2)


def test_a_fetch_for_a_position_that_moved_is_dropped():
    fetcher, subscriptions = fetcher_at(0)
    fetcher.add([CompletedFetch(TP, 0, answer(batch(0, 5)), READ_UNCOMMITTED, True)])
    subscriptions.seek(TP, 3)
    records, error = fetcher.collect(100)
    assert records == {} and error is None and not fetcher.has_data()


def test_a_refused_value_names_the_record_and_a_seek_past_it_goes_on():
    fetcher, subscriptions = fetcher_at(0, value="json")
    builder = BatchBuilder()
    for value in (b"1", b"{oops", b"3"):
        builder.append(0, None, value)
    fetcher.add([CompletedFetch(TP, 0, answer(builder.build()), READ_UNCOMMITTED, True)])
    records, error = fetcher.collect(100)
    assert [record.value for record in records[TP]] == [1]
    assert isinstance(error, RecordDeserializationError)
    assert error.offset == 1 and error.topic_partition == TP and "offset 1 of t-0" in str(error)
    assert subscriptions.state(TP).position == 1
    subscriptions.seek(TP, 2)
    fetcher.add([CompletedFetch(TP, 2, answer(builder.build()), READ_UNCOMMITTED, True)])
    records, error = fetcher.collect(100)
    assert [record.value for record in records[TP]] == [3] and error is None


def test_offset_out_of_range_resets_by_the_policy_or_names_the_partition_under_none():
    fetcher, subscriptions = fetcher_at(50)
    fetcher.add([CompletedFetch(TP, 50, answer(b"", error=ErrorCode.OFFSET_OUT_OF_RANGE), READ_UNCOMMITTED, True)])
    assert fetcher.collect(10) == ({}, None)
    assert subscriptions.awaiting_reset() == {TP: "earliest"}

    strict, _ = fetcher_at(50, reset="none")
    strict.add([CompletedFetch(TP, 50, answer(b"", error=ErrorCode.OFFSET_OUT_OF_RANGE), READ_UNCOMMITTED, True)])
    _, error = strict.collect(10)
    assert error.code == ErrorCode.OFFSET_OUT_OF_RANGE and "t-0" in str(error) and "auto.offset.reset" in str(error)


@pytest.mark.parametrize("code", [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  ErrorCode.FENCED_LEADER_EPOCH])
def test_stale_metadata_errors_are_dropped_for_a_retry(code):
    fetcher, subscriptions = fetcher_at(7)
    fetcher.add([CompletedFetch(TP, 7, answer(b"", error=code), READ_UNCOMMITTED, True)])
    assert fetcher.collect(10) == ({}, None)
    assert subscriptions.state(TP).position == 7


def test_a_paused_partition_keeps_its_position():
    fetcher, subscriptions = fetcher_at(0)
    fetcher.add([CompletedFetch(TP, 0, answer(batch(0, 3)), READ_UNCOMMITTED, True)])
    subscriptions.state(TP).paused = True
    assert fetcher.collect(10) == ({}, None)
    assert subscriptions.fetch_targets() == [] and subscriptions.state(TP).position == 0


# -- subscription state and records --

def test_subscribing_and_assigning_are_mutually_exclusive():
    state = SubscriptionState(default_reset="latest")
    state.subscribe(["a"])
    with pytest.raises(KafkaException, match="mutually exclusive"):
        state.assign_from_user([("a", 0)])
    state.unsubscribe()
    state.assign_from_user([("a", 0), ("a", 1)])
    assert state.missing_positions() == [TopicPartition("a", 0), TopicPartition("a", 1)]
    state.request_reset([("a", 1)], "earliest")
    state.seek(("a", 0), 12)
    assert state.missing_positions() == [] and state.awaiting_reset() == {TopicPartition("a", 1): "earliest"}
    assert state.fetch_targets() == [(TopicPartition("a", 0), 12)]
    with pytest.raises(KafkaException, match="not assigned"):
        state.seek(("b", 0), 1)


def test_consumer_records_group_by_partition():
    fetcher, _ = fetcher_at(0)
    fetcher.add([CompletedFetch(TP, 0, answer(batch(0, 3)), READ_UNCOMMITTED, True)])
    records = ConsumerRecords(fetcher.collect(10)[0])
    assert len(records) == 3 and records.partitions() == [TP] and bool(records)
    assert [record.offset for record in records.records(("t", 0))] == [0, 1, 2]
    assert [record.offset for record in records] == [0, 1, 2]
    assert records.records(("other", 0)) == [] and not ConsumerRecords()
