"""Fetcher.collect_columns (what Consumer.poll_columns hands over) against Fetcher.collect as the
oracle: the same records, positions and errors for synthetic fetch answers (transactions and
their markers, every codec, legacy message sets, fetch offsets inside a batch, partial tails),
whatever max.poll.records cuts them into."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from gregor.client.consumer.fetcher import READ_COMMITTED, READ_UNCOMMITTED, CompletedFetch
from gregor.protocol.error_codes import ErrorCode
from gregor.records.compression import Compression
from gregor.records.legacy import build_legacy
from gregor.records.record import CONTROL_ABORT, CONTROL_COMMIT, BatchBuilder
from tests.client.test_consumer_fetch import TP, answer, batch, fetcher_at, marker

ANSWERS = {
    "plain": (0, lambda: answer(batch(0, 5) + batch(5, 7))),
    "inside a batch": (4, lambda: answer(batch(0, 10) + batch(10, 2))),
    "partial tail": (0, lambda: answer(batch(0, 3) + batch(3, 3)[:40])),
    "transactions": (0, lambda: answer(
        batch(0, 2, producer_id=1, transactional=True) + marker(2, 1, CONTROL_ABORT)
        + batch(3, 2, producer_id=2, transactional=True) + marker(5, 2, CONTROL_COMMIT) + batch(6, 2),
        aborted=[(1, 0)])),
    "trailing control": (0, lambda: answer(batch(0, 1) + batch(1, 2, producer_id=1, transactional=True)
                                           + marker(3, 1, CONTROL_ABORT), aborted=[(1, 1)])),
    "legacy then v2": (1, lambda: answer(build_legacy([(o, 2_000 + o, b"k%d" % o, b"v%d" % o) for o in range(4)],
                                                      1, Compression.GZIP) + batch(4, 3))),
    "log append time": (0, lambda: answer(append_time_batch(0, 3) + batch(3, 2))),
    **{f"codec {codec.name}": (0, lambda codec=codec: answer(batch(0, 6, compression=codec)
                                                             + batch(6, 4, compression=codec)))
       for codec in Compression},
}


def append_time_batch(base_offset: int, count: int) -> bytes:
    builder = BatchBuilder(base_offset=base_offset, timestamp_type=1)
    for offset in range(count):
        builder.append(9_000 + offset, None, b"x%d" % offset)
    return builder.build()


def by_records(fetch_offset, data, isolation, limit):
    fetcher, subscriptions = fetcher_at(fetch_offset)
    fetcher.add([CompletedFetch(TP, fetch_offset, data, isolation, True)])
    found = []
    while fetcher.has_data():
        records, error = fetcher.collect(limit)
        assert error is None
        found += [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers), r.leader_epoch)
                  for r in records.get(TP, [])]
    return found, subscriptions.state(TP).position


def by_columns(fetch_offset, data, isolation, limit):
    fetcher, subscriptions = fetcher_at(fetch_offset)
    fetcher.add([CompletedFetch(TP, fetch_offset, data, isolation, True)])
    found = []
    while fetcher.has_data():
        chunks, error = fetcher.collect_columns(limit)
        assert error is None
        assert sum(len(chunk) for chunk in chunks) <= limit
        for chunk in chunks:
            assert chunk.topic_partition == TP
            columns = chunk.columns
            rows = list(zip(columns.offsets, columns.timestamps, columns.keys, columns.values, columns.headers))
            found += [(offset, timestamp, chunk.timestamp_type, key, value, list(headers), None)
                      for offset, timestamp, key, value, headers in rows]
    return found, subscriptions.state(TP).position


def without_epochs(found):
    return [record[:-1] for record in found]


@pytest.mark.parametrize("isolation", [READ_UNCOMMITTED, READ_COMMITTED])
@pytest.mark.parametrize("limit", [1, 3, 10_000])
@pytest.mark.parametrize("name", list(ANSWERS))
def test_same_records_and_position_as_collect(name, limit, isolation):
    fetch_offset, make = ANSWERS[name]
    expected, position = by_records(fetch_offset, make(), isolation, limit)
    found, found_position = by_columns(fetch_offset, make(), isolation, limit)
    assert without_epochs(found) == without_epochs(expected) and expected
    assert found_position == position


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 6)), min_size=1, max_size=12), st.integers(0, 8))
def test_poll_and_poll_columns_can_take_turns(turns, fetch_offset):
    """Alternating the two paths over one buffered answer hands over each record once, in order."""
    fetcher, subscriptions = fetcher_at(fetch_offset)
    fetcher.add([CompletedFetch(TP, fetch_offset, answer(batch(0, 4) + batch(4, 5) + batch(9, 3)),
                                READ_UNCOMMITTED, True)])
    seen = []
    for columnar, limit in turns:
        if columnar:
            chunks, _ = fetcher.collect_columns(limit)
            seen += [offset for chunk in chunks for offset in chunk.columns.offsets]
        else:
            records, _ = fetcher.collect(limit)
            seen += [record.offset for record in records.get(TP, [])]
        assert subscriptions.state(TP).position == (seen[-1] + 1 if seen else fetch_offset)
    assert seen == list(range(fetch_offset, fetch_offset + len(seen)))


def test_chunks_carry_the_leader_epoch_and_one_chunk_spans_batches():
    fetcher, subscriptions = fetcher_at(0)
    fetcher.add([CompletedFetch(TP, 0, answer(batch(0, 3) + batch(3, 3, leader_epoch=5)), READ_UNCOMMITTED, True)])
    chunks, error = fetcher.collect_columns(100)
    assert error is None and len(chunks) == 1
    assert chunks[0].leader_epoch == 5 and chunks[0].columns.offsets == [0, 1, 2, 3, 4, 5]
    assert subscriptions.state(TP).position_epoch == 5


def test_a_corrupt_batch_is_an_error_after_the_good_records():
    damaged = bytearray(batch(3, 3))
    damaged[-1] ^= 0xFF
    fetcher, subscriptions = fetcher_at(0)
    fetcher.add([CompletedFetch(TP, 0, answer(batch(0, 3) + bytes(damaged)), READ_UNCOMMITTED, True)])
    chunks, error = fetcher.collect_columns(100)
    assert [offset for chunk in chunks for offset in chunk.columns.offsets] == [0, 1, 2]
    assert error.code == ErrorCode.CORRUPT_MESSAGE and "t-0" in str(error)
    assert subscriptions.state(TP).position == 3


def test_keys_and_values_stay_raw_bytes_whatever_the_deserializers():
    fetcher, _ = fetcher_at(0, key="str", value="json")
    fetcher.add([CompletedFetch(TP, 0, answer(batch(0, 2)), READ_UNCOMMITTED, True)])
    chunks, _ = fetcher.collect_columns(10)
    assert chunks[0].columns.keys == [b"k0", b"k1"] and chunks[0].columns.values == [b"v0", b"v1"]
