"""The `__share_group_state` record format, and a share-partition brought back from it."""

from __future__ import annotations

import uuid

import pytest

from gregor.coordinator.share import share_state_records as records
from gregor.coordinator.share.record_state import RecordState
from gregor.coordinator.share.share_partition import (
    Acknowledgement, SharePartition, SharePartitionConfig, ShareSnapshot, StateBatch,
)


def test_keys_and_values_round_trip_and_bad_bytes_are_refused():
    topic_id = uuid.uuid4()
    assert records.decode_key(records.encode_key("grüppe", topic_id, 7)) == ("grüppe", topic_id, 7)
    snapshot = ShareSnapshot(10, 3, (StateBatch(10, 12, RecordState.ACKNOWLEDGED, 1),
                                      StateBatch(13, 13, RecordState.AVAILABLE, 2)))
    assert records.decode_value(records.encode_value(snapshot)) == snapshot
    with pytest.raises(records.ShareStateFormatError):
        records.decode_value(records.encode_value(snapshot)[:-1])
    with pytest.raises(records.ShareStateFormatError):
        records.decode_key(b"\x00\x01garbage")


def test_a_restored_partition_keeps_finished_records_and_delivery_counts_and_loses_locks():
    config = SharePartitionConfig(lock_duration_ms=100, delivery_count_limit=3, max_record_locks=100)
    share = SharePartition(config, 0)
    share.acquire("a", [(0, 4, False)], 10, 0)
    share.acknowledge("a", [Acknowledgement(1, 1, (1,)), Acknowledgement(2, 2, (2,))], 1)
    restored = SharePartition.from_snapshot(config, records.decode_value(records.encode_value(share.snapshot())))
    assert restored.start_offset == 0 and restored.state_epoch == share.state_epoch
    states = {o: (r.state, r.delivery_count) for o, r in restored.in_flight().items()}
    assert states == {0: (RecordState.AVAILABLE, 1), 1: (RecordState.ACKNOWLEDGED, 1), 2: (RecordState.AVAILABLE, 1),
                      3: (RecordState.AVAILABLE, 1), 4: (RecordState.AVAILABLE, 1)}
    again = restored.acquire("b", [(0, 4, False)], 10, 5)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in again] == [(0, 0, 2), (2, 4, 2)]


def test_a_huge_hole_in_the_log_costs_nothing_and_is_skipped():
    share = SharePartition(SharePartitionConfig(), 0)
    got = share.acquire("a", [(0, 0, False), (10**12, 10**12 + 1, False)], 10, 0)
    assert [(r.first_offset, r.last_offset) for r in got] == [(0, 0), (10**12, 10**12 + 1)]
    assert len(share.in_flight()) == 3
    share.acknowledge("a", [Acknowledgement(0, 0, (1,)), Acknowledgement(10**12, 10**12 + 1, (1,))], 1)
    assert share.start_offset == share.end_offset == 10**12 + 2 and not share.in_flight()
