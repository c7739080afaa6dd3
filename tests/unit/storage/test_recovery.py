"""Recovery at open: torn tails and corrupt batches are cut off, indexes rebuilt and consistent."""

from __future__ import annotations

import os

from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW, batch, index_is_consistent, records_of

CONFIG = LogConfig(segment_bytes=3000, index_interval_bytes=250)


def fill(directory: str, batches: int = 60) -> Log:
    log = Log(directory, CONFIG, NOW)
    for i in range(batches):
        log.append_as_leader(batch(5, NOW + i, 20), 0, NOW)
    return log


def reads_are_consistent(log: Log) -> None:
    index_is_consistent(log)
    for offset in range(log.log_start_offset, log.log_end_offset):
        records = records_of(log.read_bytes(offset, 1))
        assert records[0][0] <= offset <= records[-1][0]
    assert [o for o, _ in records_of(log.read_bytes(log.log_start_offset, 10**9))] == \
        list(range(log.log_start_offset, log.log_end_offset))


def flip_byte(path: str, position: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(position)
        byte = handle.read(1)
        handle.seek(position)
        handle.write(bytes([byte[0] ^ 0xFF]))


def test_torn_tail_is_truncated_at_the_last_whole_batch(tmp_path):
    directory = str(tmp_path / "t-0")
    log = fill(directory)
    last = log.active_segment
    tail_start = last.size - len(batch(5, NOW, 20))
    os.truncate(last.path, last.size - 10)
    reopened = Log(directory, CONFIG, NOW)
    assert reopened.truncated_bytes_at_load == len(batch(5, NOW, 20)) - 10
    assert reopened.log_end_offset == 295
    assert reopened.active_segment.size == tail_start
    reads_are_consistent(reopened)
    assert reopened.append_as_leader(batch(), 0, NOW).first_offset == 295


def test_corrupt_batch_in_the_middle_truncates_there_and_drops_later_segments(tmp_path):
    directory = str(tmp_path / "t-0")
    log = fill(directory)
    assert len(log.segments) >= 5
    victim = log.segments[2]
    batches = list(victim.batches())
    position, header = batches[len(batches) // 2]
    flip_byte(victim.path, position + 70)
    later = [s.path for s in log.segments[3:]]
    reopened = Log(directory, CONFIG, NOW)
    assert reopened.log_end_offset == header.base_offset
    assert len(reopened.segments) == 3
    assert not any(os.path.exists(path) for path in later)
    reads_are_consistent(reopened)
    reopened.append_as_leader(batch(5), 0, NOW)
    assert reopened.log_end_offset == header.base_offset + 5


def test_recovery_starts_at_the_segment_holding_the_recovery_point(tmp_path):
    directory = str(tmp_path / "t-0")
    log = fill(directory)
    early = log.segments[0]
    flip_byte(early.path, 80)
    log.close()
    trusting = Log(directory, CONFIG, NOW, recovery_point=log.segments[-1].base_offset)
    assert trusting.log_end_offset == 300, "segments below the recovery point are not re-validated"
    trusting.close()
    rescanned = Log(directory, CONFIG, NOW, recovery_point=0)
    assert rescanned.log_end_offset == 0
    assert len(rescanned.segments) == 1 and rescanned.active_segment.is_empty


def test_clean_shutdown_trusts_indexes_but_rebuilds_insane_ones(tmp_path):
    directory = str(tmp_path / "t-0")
    log = fill(directory)
    log.close()
    first = log.segments[0]
    with open(first.offset_index.path, "ab") as handle:
        handle.write(b"\x7f\x00\x00\x00\x7f\x00\x00\x00")
    os.truncate(log.segments[1].time_index.path, 5)
    reopened = Log(directory, CONFIG, NOW, recovery_point=0, clean_shutdown=True)
    assert reopened.log_end_offset == 300 and reopened.truncated_bytes_at_load == 0
    reads_are_consistent(reopened)
    assert os.path.getsize(first.offset_index.path) == 8 * reopened.segments[0].offset_index.entries


def test_clean_shutdown_skips_revalidation(tmp_path):
    directory = str(tmp_path / "t-0")
    log = fill(directory)
    log.close()
    flip_byte(log.segments[1].path, 80)
    trusting = Log(directory, CONFIG, NOW, clean_shutdown=True)
    assert trusting.log_end_offset == 300
    trusting.close()
    assert Log(directory, CONFIG, NOW, clean_shutdown=False).log_end_offset == log.segments[1].base_offset


def test_a_torn_index_entry_and_stale_files_are_cleaned_up(tmp_path):
    directory = str(tmp_path / "t-0")
    log = fill(directory)
    with open(log.active_segment.offset_index.path, "ab") as handle:
        handle.write(b"\x00\x01\x02")
    for name in ("00000000000000000000.log.deleted", "00000000000000000000.snapshot.tmp",
                 "00000000000000099999.index"):
        open(os.path.join(directory, name), "wb").close()
    reopened = Log(directory, CONFIG, NOW)
    assert reopened.log_end_offset == 300
    reads_are_consistent(reopened)
    names = os.listdir(directory)
    assert not [n for n in names if n.endswith((".deleted", ".tmp")) or n.startswith("00000000000000099999")]


def test_log_start_checkpoint_above_the_data_restarts_the_log_there(tmp_path):
    directory = str(tmp_path / "t-0")
    fill(directory, 2).close()
    reopened = Log(directory, CONFIG, NOW, log_start_offset=500)
    assert reopened.log_start_offset == reopened.log_end_offset == 500
    assert reopened.append_as_leader(batch(), 0, NOW).first_offset == 500


def test_truncate_to_for_replication(tmp_path):
    directory = str(tmp_path / "t-0")
    log = fill(directory)
    log.high_watermark = 300
    log.truncate_to(152)
    assert log.log_end_offset == 150 and log.high_watermark == 150
    reads_are_consistent(log)
    assert log.append_as_leader(batch(2), 0, NOW).first_offset == 150
    log.delete_records_before(100)
    log.truncate_to(40)
    assert log.log_start_offset == log.log_end_offset == log.high_watermark == 40
    assert len(log.segments) == 1 and log.append_as_leader(batch(), 0, NOW).first_offset == 40


def test_a_missing_index_is_rebuilt_even_after_a_clean_shutdown(tmp_path):
    directory = str(tmp_path / "t-0")
    log = fill(directory)
    log.close()
    entries = log.segments[0].offset_index.entries
    os.remove(log.segments[0].offset_index.path)
    reopened = Log(directory, CONFIG, NOW, clean_shutdown=True)
    assert reopened.segments[0].offset_index.entries == entries > 0
    reads_are_consistent(reopened)


def test_small_segments_without_index_entries_load_without_recovery(tmp_path):
    directory = str(tmp_path / "t-0")
    log = Log(directory, LogConfig(segment_bytes=600), NOW)
    for _ in range(6):
        log.append_as_leader(batch(2), 0, NOW)
    log.close()
    assert all(s.offset_index.entries == 0 for s in log.segments)
    assert all(os.path.exists(s.offset_index.path) and os.path.exists(s.time_index.path) for s in log.segments)
    with open(log.segments[0].path, "r+b") as handle:
        handle.seek(80)
        handle.write(b"\xff")
    assert Log(directory, LogConfig(segment_bytes=600), NOW, clean_shutdown=True).log_end_offset == 12
