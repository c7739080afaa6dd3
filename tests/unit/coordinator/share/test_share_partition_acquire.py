"""SharePartition.acquire's limits: `max_records` is soft at record-batch boundaries (Kafka's
SharePartition acquires whole batches)."""

from __future__ import annotations

from gregor.coordinator.share.share_partition import AcquiredRange, SharePartition, SharePartitionConfig


def test_a_batch_bigger_than_max_records_is_acquired_whole() -> None:
    share = SharePartition(SharePartitionConfig(), 0)
    got = share.acquire("a", [(0, 19, False), (20, 24, False)], 5, 0)
    assert got == [AcquiredRange(0, 19, 1)]
    assert share.end_offset == 20


def test_later_batches_only_while_under_max_records() -> None:
    share = SharePartition(SharePartitionConfig(), 0)
    # 3 acquired, under 5: the next batch is taken whole (7); then the limit is reached.
    got = share.acquire("a", [(0, 2, False), (3, 6, False), (7, 9, False)], 5, 0)
    assert got == [AcquiredRange(0, 6, 1)]
    assert share.acquire("b", [(7, 9, False)], 5, 0) == [AcquiredRange(7, 9, 1)]
