"""`share.isolation.level`: read_committed never delivers aborted transactions' batches."""

from __future__ import annotations

from gregor.coordinator.share.isolation import AbortedRange, LogBatch, undeliverable
from gregor.coordinator.share.share_partition import AcquiredRange, SharePartition, SharePartitionConfig
from gregor.metadata.group_configs import BROKER_GROUP_DEFAULTS, SHARE_BROKER_DEFAULTS, validate_group_configs

# producer 7 aborts 0-1 (marker 2), producer 8 commits 3-4 (marker 5), 6 is not transactional
LOG = [LogBatch(0, 1, 7, True, False), LogBatch(2, 2, 7, True, True), LogBatch(3, 4, 8, True, False),
       LogBatch(5, 5, 8, True, True), LogBatch(6, 6, -1, False, False)]
ABORTED = [AbortedRange(7, 0, 2)]


def test_read_committed_archives_aborted_and_control_batches_and_delivers_the_rest() -> None:
    share = SharePartition(SharePartitionConfig(), 0)
    got = share.acquire("a", undeliverable(LOG, ABORTED, True), 100, 0)
    assert got == [AcquiredRange(3, 4, 1), AcquiredRange(6, 6, 1)]
    assert share.start_offset == 3  # the aborted batch and both markers archived, never delivered


def test_read_uncommitted_delivers_aborted_records_too() -> None:
    share = SharePartition(SharePartitionConfig(), 0)
    assert share.acquire("a", undeliverable(LOG, ABORTED, False), 100, 0) == [
        AcquiredRange(0, 1, 1), AcquiredRange(3, 4, 1), AcquiredRange(6, 6, 1)]


def test_a_later_transaction_of_the_aborting_producer_is_delivered() -> None:
    later = [LogBatch(0, 1, 7, True, False), LogBatch(2, 2, 7, True, True), LogBatch(3, 3, 7, True, False)]
    assert undeliverable(later, ABORTED, True) == [(0, 1, True), (2, 2, True), (3, 3, False)]


def test_share_isolation_level_is_a_checked_group_config() -> None:
    broker = {**BROKER_GROUP_DEFAULTS, **SHARE_BROKER_DEFAULTS}
    assert validate_group_configs({"share.isolation.level": "read_committed"}, broker) is None
    assert validate_group_configs({"share.isolation.level": "committed"}, broker) == (
        "Invalid value committed for configuration share.isolation.level: "
        "String must be one of: read_committed, read_uncommitted")
