"""The leader-epoch cache alone (Kafka's endOffsetFor rules, the checkpoint file) and as the log keeps it."""

from __future__ import annotations

import os

import pytest

from gregor.records.batch import parse_header, scan_batches
from gregor.storage.errors import StorageError
from gregor.storage.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT, UNDEFINED, EpochEndOffset, EpochEntry, LeaderEpochCache,
)
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW, batch, records_of


def cache_at(tmp_path, *entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(str(tmp_path / LEADER_EPOCH_CHECKPOINT))
    for epoch, offset in entries:
        cache.assign(epoch, offset)
    return cache


def test_assign_keeps_the_first_offset_of_each_epoch(tmp_path):
    cache = cache_at(tmp_path, (0, 0), (0, 5), (2, 10), (2, 12), (5, 20))
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(5, 20)]
    assert cache.latest_epoch == 5
    assert cache.start_offset_of(2) == 10 and cache.start_offset_of(3) is None


def test_assign_drops_entries_that_contradict_the_new_one(tmp_path):
    cache = cache_at(tmp_path, (0, 0), (2, 10), (5, 20))
    cache.assign(3, 15)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 15)]
    cache.assign(3, 12)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 12)]
    cache.assign(4, 5)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(4, 5)]
    with pytest.raises(ValueError):
        cache.assign(-1, 3)


def test_end_offset_for_follows_kafka(tmp_path):
    cache = cache_at(tmp_path, (1, 0), (3, 10), (6, 25))
    assert cache.end_offset_for(6, 40) == EpochEndOffset(6, 40)
    assert cache.end_offset_for(3, 40) == EpochEndOffset(3, 25)
    assert cache.end_offset_for(4, 40) == EpochEndOffset(3, 25)
    assert cache.end_offset_for(5, 40) == EpochEndOffset(3, 25)
    assert cache.end_offset_for(1, 40) == EpochEndOffset(1, 10)
    assert cache.end_offset_for(0, 40) == EpochEndOffset(0, 0)
    assert cache.end_offset_for(7, 40) == UNDEFINED
    assert cache.end_offset_for(-1, 40) == UNDEFINED


def test_an_empty_cache_knows_no_epoch(tmp_path):
    cache = LeaderEpochCache(str(tmp_path / "empty"))
    assert cache.end_offset_for(0, 10) == UNDEFINED
    assert cache.latest_epoch == -1
    assert not cache.loaded


def test_truncation_from_the_end_and_from_the_start(tmp_path):
    cache = cache_at(tmp_path, (1, 0), (3, 10), (6, 25))
    cache.truncate_from_end(26)
    assert cache.latest_epoch == 6
    cache.truncate_from_end(25)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(3, 10)]
    cache.truncate_from_start(4)
    assert cache.entries == [EpochEntry(1, 4), EpochEntry(3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [EpochEntry(3, 12)]
    cache.truncate_from_start(3)
    assert cache.entries == [EpochEntry(3, 12)]
    cache.clear()
    assert cache.entries == []


def test_checkpoint_file_is_kafkas_text_format_and_survives_reopening(tmp_path):
    cache = cache_at(tmp_path, (0, 0), (4, 17))
    with open(cache.path, encoding="utf-8") as handle:
        assert handle.read() == "0\n2\n0 0\n4 17\n"
    again = LeaderEpochCache(cache.path)
    assert again.loaded and again.entries == cache.entries
    assert not os.path.exists(cache.path + ".tmp")


@pytest.mark.parametrize("text", ["", "1\n1\n0 0\n", "0\n2\n0 0\n", "0\n1\nx 0\n", "0\n2\n3 0\n2 5\n"])
def test_a_malformed_checkpoint_is_not_loaded(tmp_path, text):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text(text)
    cache = LeaderEpochCache(str(path))
    assert not cache.loaded and cache.entries == []


# -- kept by the log


def open_log(directory: str, **config) -> Log:
    return Log(directory, LogConfig(**config), NOW)


def test_appends_as_leader_record_each_new_epoch(tmp_path):
    log = open_log(str(tmp_path / "t-0"))
    log.append_as_leader(batch(3), 0, NOW)
    log.append_as_leader(batch(2), 0, NOW)
    log.append_as_leader(batch(1), 2, NOW)
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(2, 5)]
    assert log.leader_epoch_cache.end_offset_for(0, log.log_end_offset) == EpochEndOffset(0, 5)


def leader_with_epochs(directory: str) -> Log:
    leader = open_log(directory)
    for epoch in (0, 0, 1, 3, 3):
        leader.append_as_leader(batch(2, tag=b"e%d" % epoch), epoch, NOW)
    return leader


def test_append_as_follower_keeps_offsets_and_epochs(tmp_path):
    leader = leader_with_epochs(str(tmp_path / "leader" / "t-0"))
    follower = open_log(str(tmp_path / "follower" / "t-0"), segment_bytes=300)
    fetched = leader.read_bytes(0, 10**6)
    split = scan_batches(fetched)[0][2][1]
    info = follower.append_as_follower(fetched[:split], NOW)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 3, 4)
    rest = leader.read_bytes(follower.log_end_offset, 10**6)
    follower.append_as_follower(rest, NOW)
    assert follower.read_bytes(0, 10**6) == fetched
    assert follower.leader_epoch_cache.entries == leader.leader_epoch_cache.entries
    assert len(follower.segments) > 1


def test_append_as_follower_refuses_gaps_overlaps_and_corruption(tmp_path):
    leader = leader_with_epochs(str(tmp_path / "leader" / "t-0"))
    follower = open_log(str(tmp_path / "follower" / "t-0"))
    with pytest.raises(StorageError) as gap:
        follower.append_as_follower(leader.read_bytes(2, 10**6), NOW)
    assert gap.value.code.name == "OFFSET_OUT_OF_RANGE"
    follower.append_as_follower(leader.read_bytes(0, 10**6), NOW)
    with pytest.raises(StorageError):
        follower.append_as_follower(leader.read_bytes(0, 10**6), NOW)
    corrupt = bytearray(leader.read_bytes(0, 1))
    corrupt[-1] ^= 0xFF
    fresh = open_log(str(tmp_path / "fresh" / "t-0"))
    with pytest.raises(Exception) as bad:
        fresh.append_as_follower(bytes(corrupt), NOW)
    assert bad.value.code.name == "CORRUPT_MESSAGE"
    assert fresh.log_end_offset == 0 and fresh.leader_epoch_cache.entries == []


def test_truncation_and_log_start_advance_update_the_cache(tmp_path):
    log = leader_with_epochs(str(tmp_path / "t-0"))
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(1, 4), EpochEntry(3, 6)]
    log.truncate_to(6)
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(1, 4)]
    log.high_watermark = log.log_end_offset
    log.delete_records_before(2)
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 2), EpochEntry(1, 4)]
    log.truncate_to(1)
    assert log.log_start_offset == 1 and log.leader_epoch_cache.entries == []


def test_reopening_loads_the_checkpoint_without_epochs_that_hold_no_batch(tmp_path):
    directory = str(tmp_path / "t-0")
    log = leader_with_epochs(directory)
    expected = list(log.leader_epoch_cache.entries)
    log.leader_epoch_cache.assign(7, log.log_end_offset)
    log.flush(NOW)
    log.close()
    with open(os.path.join(directory, LEADER_EPOCH_CHECKPOINT), encoding="utf-8") as handle:
        assert handle.read().endswith("7 10\n")
    again = Log(directory, LogConfig(), NOW, recovery_point=log.log_end_offset, clean_shutdown=True)
    assert again.leader_epoch_cache.loaded and again.leader_epoch_cache.entries == expected


def test_recovery_rebuilds_a_missing_checkpoint_from_the_batches(tmp_path):
    directory = str(tmp_path / "t-0")
    log = leader_with_epochs(directory)
    expected = list(log.leader_epoch_cache.entries)
    log.close()
    os.remove(os.path.join(directory, LEADER_EPOCH_CHECKPOINT))
    again = Log(directory, LogConfig(), NOW, clean_shutdown=True)
    assert again.leader_epoch_cache.entries == expected


def test_a_torn_tail_takes_its_epochs_with_it(tmp_path):
    directory = str(tmp_path / "t-0")
    log = leader_with_epochs(directory)
    data = log.read_bytes(0, 10**6)
    last_header, last_pos = scan_batches(data)[0][-2]
    log.close()
    segment_path = log.segments[0].path
    with open(segment_path, "r+b") as handle:
        handle.truncate(last_pos + 10)
    again = Log(directory, LogConfig(), NOW)
    assert again.log_end_offset == last_header.base_offset == 6
    assert again.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(1, 4)]
    assert [offset for offset, _ in records_of(again.read_bytes(0, 10**6))] == list(range(6))
    assert parse_header(data, last_pos).partition_leader_epoch == 3


def test_recovering_a_segment_that_starts_inside_an_older_epoch_keeps_the_later_epochs(tmp_path):
    """Found by the replication simulator: re-reading an epoch-1 batch at the start of the
    recovered segment must not drop the checkpointed epoch 3 (nor move epoch 1's start), or the
    replica answers OffsetsForLeaderEpoch wrongly and its followers truncate in a loop."""
    directory = str(tmp_path / "t-0")
    log = open_log(directory, segment_bytes=200)
    for epoch in (0, 1, 1, 1, 3):
        log.append_as_leader(batch(2, tag=b"e%d" % epoch), epoch, NOW)
    expected = list(log.leader_epoch_cache.entries)
    assert expected == [EpochEntry(0, 0), EpochEntry(1, 2), EpochEntry(3, 8)]
    recovered_from = next(s.base_offset for s in log.segments if 2 < s.base_offset < 8)
    log.close()
    again = Log(directory, LogConfig(segment_bytes=200), NOW, recovery_point=recovered_from)
    assert again.log_end_offset == 10
    assert again.leader_epoch_cache.entries == expected
