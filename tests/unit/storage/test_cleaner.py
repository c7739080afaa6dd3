"""Compaction semantics: latest value per key, tombstones, lags, bounds, ratio, codecs, producers."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.error_codes import ErrorCode
from gregor.records.batch import scan_batches, verify_crc
from gregor.records.compression import Compression
from gregor.records.record import BatchBuilder, decode_records
from gregor.storage.cleaned_batch import DELETE_HORIZON_MASK
from gregor.storage.cleaner import CleanerConfig, LogCleaner, dirtiness
from gregor.storage.errors import StorageError
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.cleaner_helpers import (
    Entry, append, clean, compacted, contents, entries, keyed, latest, settle,
)
from tests.unit.storage.helpers import NOW, index_is_consistent

HOUR = 3_600_000
DAY = 24 * HOUR

operation = st.tuples(st.integers(0, 5), st.one_of(st.none(), st.binary(min_size=1, max_size=30)))
batches = st.lists(st.tuples(st.lists(operation, min_size=1, max_size=4), st.sampled_from(list(Compression))),
                   min_size=1, max_size=30)


def write(log: Log, generated: list, now_ms: int) -> list[Entry]:
    written = []
    for operations, codec in generated:
        pairs = [(b"key-%d" % key, value) for key, value in operations]
        first = append(log, pairs, now_ms, compression=codec)
        written.extend((first + i, key, value) for i, (key, value) in enumerate(pairs))
    settle(log, now_ms)
    return written


def reads_are_consistent(log: Log, expected: list[Entry]) -> None:
    index_is_consistent(log)
    assert contents(log) == expected
    for offset, key, value in expected:
        assert (offset, key, value) in entries(log.read_bytes(offset, 1))


@settings(max_examples=40, deadline=None)
@given(first=batches, second=batches)
def test_a_compacted_log_holds_the_latest_value_of_each_key(first, second):
    """Two cleanings against a dict model: tombstones survive the first, go once their horizon passes."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "t-0")
        log = compacted(path, delete_retention_ms=DAY)
        written = write(log, first, NOW)
        assert clean(log, NOW) is not None
        expected = latest(written)
        reads_are_consistent(log, expected)
        tombstoned_first = {key for _, key, value in expected if value is None}

        written += write(log, second, NOW + DAY)
        assert clean(log, NOW + DAY) is not None
        expected = [(offset, key, value) for offset, key, value in latest(written)
                    if value is not None or offset >= len(written) - sum(len(ops) for ops, _ in second)
                    or key not in tombstoned_first]
        reads_are_consistent(log, expected)
        log.close()
        reopened = Log(path, log.config, NOW + DAY)
        reads_are_consistent(reopened, expected)
        reopened.close()


def test_tombstones_stay_until_delete_retention_ms_has_passed(tmp_path):
    log = compacted(str(tmp_path / "t-0"), delete_retention_ms=1000)
    append(log, [(b"a", b"1"), (b"b", b"2")], timestamp=NOW - 50)
    append(log, [(b"a", None)], timestamp=NOW - 40)
    settle(log)
    clean(log, NOW)
    assert contents(log) == [(1, b"b", b"2"), (2, b"a", None)]
    data = log.read_bytes(2, 1)
    (header, pos), = scan_batches(data)[0]
    assert header.attributes & DELETE_HORIZON_MASK and header.base_timestamp == NOW + 1000
    assert [r.timestamp for r in decode_records(data, pos, header, 1 << 20)] == [NOW - 40]

    append(log, [(b"c", b"3")], NOW + 999)
    settle(log, NOW + 999)
    clean(log, NOW + 999)
    assert (2, b"a", None) in contents(log)
    append(log, [(b"d", b"4")], NOW + 1000)
    settle(log, NOW + 1000)
    clean(log, NOW + 1000)
    assert contents(log) == [(1, b"b", b"2"), (3, b"c", b"3"), (4, b"d", b"4")]


def test_min_compaction_lag_ms_leaves_recent_segments_dirty(tmp_path):
    log = compacted(str(tmp_path / "t-0"), min_compaction_lag_ms=HOUR)
    append(log, [(b"a", b"old"), (b"a", b"older")], timestamp=NOW - 2 * HOUR)
    log.roll(NOW)
    recent = append(log, [(b"a", b"new"), (b"a", b"newer")], timestamp=NOW - HOUR // 2)
    settle(log)
    assert dirtiness(log, NOW).first_uncleanable == recent
    clean(log, NOW)
    assert contents(log) == [(1, b"a", b"older"), (2, b"a", b"new"), (3, b"a", b"newer")]
    clean(log, NOW + HOUR)
    assert contents(log) == [(3, b"a", b"newer")]


def test_max_compaction_lag_ms_cleans_below_the_dirty_ratio(tmp_path):
    log = compacted(str(tmp_path / "t-0"), min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=HOUR)
    append(log, [(b"a", b"1"), (b"a", b"2")], timestamp=NOW)
    settle(log)
    clean(log, NOW)
    append(log, [(b"b", b"1")], timestamp=NOW)
    append(log, [(b"b", b"2")], timestamp=NOW)
    settle(log)
    assert dirtiness(log, NOW).ratio < 0.99 and clean(log, NOW + HOUR - 1) is None
    assert clean(log, NOW + HOUR + 1) is not None
    assert contents(log) == [(1, b"a", b"2"), (3, b"b", b"2")]


def test_a_compacted_log_rolls_within_max_compaction_lag_ms(tmp_path):
    log = compacted(str(tmp_path / "t-0"), max_compaction_lag_ms=HOUR)
    append(log, [(b"a", b"1")], NOW, timestamp=NOW)
    append(log, [(b"a", b"2")], NOW + HOUR + 1, timestamp=NOW + HOUR + 1)
    assert len(log.segments) == 2
    assert LogConfig(max_compaction_lag_ms=HOUR).max_segment_ms == LogConfig().segment_ms


def test_the_active_segment_and_what_is_above_the_high_watermark_stay(tmp_path):
    log = compacted(str(tmp_path / "t-0"), segment_bytes=200)
    for i in range(12):
        append(log, [(b"k", b"%d" % i)])
    assert len(log.segments) >= 4
    above = log.segments[2]
    log.high_watermark = above.base_offset + 1
    untouched = {s.base_offset: open(s.path, "rb").read() for s in log.segments[2:]}
    clean(log, NOW)
    assert dirtiness(log, NOW).first_uncleanable == above.base_offset
    for segment in log.segments:
        if segment.base_offset in untouched:
            assert open(segment.path, "rb").read() == untouched[segment.base_offset]
    kept = contents(log)
    assert [o for o, _, _ in kept if o < above.base_offset] == [above.base_offset - 1]
    assert [o for o, _, _ in kept if o >= above.base_offset] == list(range(above.base_offset, 12))

    log.high_watermark = log.log_end_offset
    clean(log, NOW)
    active = log.active_segment.base_offset
    assert [o for o, _, _ in contents(log)] == [active - 1] + list(range(active, 12))


def test_the_dirty_ratio_decides_whether_and_which_log_is_cleaned(tmp_path):
    def log_with(name: str, ratio: float, duplicates: int) -> Log:
        log = compacted(str(tmp_path / name), min_cleanable_dirty_ratio=ratio, segment_bytes=10_000)
        for i in range(10):
            append(log, [(b"k%d" % i, b"x" * 50)])
        settle(log)
        clean(log, NOW)
        for _ in range(duplicates):
            append(log, [(b"k0", b"y" * 50)])
        settle(log)
        return log

    quiet = log_with("quiet-0", 0.5, 2)
    busy = log_with("busy-0", 0.5, 12)
    deleting = log_with("plain-0", 0.0, 12)
    deleting.update_config(LogConfig(cleanup_policy="delete"))
    busy_ratio = dirtiness(busy, NOW).ratio
    assert dirtiness(quiet, NOW).ratio < 0.5 < busy_ratio
    cleaner = LogCleaner()
    task = cleaner.begin([quiet, deleting, busy], NOW)
    assert task is not None and task.log is busy
    assert cleaner.begin([quiet, deleting, busy], NOW) is None, "busy is in progress, quiet below its ratio"
    task.run()
    assert cleaner.finish(task, NOW).dirty_ratio == busy_ratio
    assert dirtiness(busy, NOW).ratio == 0


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_rewritten_batches_keep_their_codec(tmp_path, codec):
    log = compacted(str(tmp_path / "t-0"))
    append(log, [(b"a", b"1"), (b"b", b"2" * 100), (b"c", b"3")], compression=codec)
    append(log, [(b"a", b"4")], compression=codec)
    settle(log)
    clean(log, NOW)
    data = log.read_bytes(0, 1 << 20)
    batches, _ = scan_batches(data)
    assert [h.compression for h, _ in batches] == [codec, codec]
    assert all(verify_crc(data, pos, header) for header, pos in batches)
    assert batches[0][0].records_count == 2 and batches[0][0].last_offset_delta == 2
    assert entries(data) == [(1, b"b", b"2" * 100), (2, b"c", b"3"), (3, b"a", b"4")]


def test_the_last_batch_of_a_producer_stays_empty_for_its_sequence(tmp_path):
    path = str(tmp_path / "t-0")
    log = compacted(path)
    append(log, [(b"a", b"1")], producer_id=7, producer_epoch=0, base_sequence=0)
    append(log, [(b"b", b"1")], producer_id=8, producer_epoch=0, base_sequence=0)
    append(log, [(b"b", b"2")], producer_id=8, producer_epoch=0, base_sequence=1)
    append(log, [(b"a", b"2"), (b"b", b"3")])
    append(log, [(b"c", b"1")])
    settle(log)
    clean(log, NOW)
    assert contents(log) == [(3, b"a", b"2"), (4, b"b", b"3"), (5, b"c", b"1")]
    batches = [h for h, _ in scan_batches(log.read_bytes(0, 1 << 20))[0]]
    assert [(h.base_offset, h.records_count, h.producer_id, h.base_sequence) for h in batches] == [
        (0, 0, 7, 0), (2, 0, 8, 1), (3, 2, -1, -1), (5, 1, -1, -1)]
    log.close()
    for name in os.listdir(path):
        if name.endswith(".snapshot"):
            os.remove(os.path.join(path, name))
    reopened = Log(path, log.config, NOW)
    assert reopened.producer_state.producers[7].last_sequence == 0
    assert reopened.producer_state.producers[8].last_sequence == 1
    with pytest.raises(StorageError) as raised:
        reopened.append_as_leader(keyed([(b"a", b"3")], producer_id=7, producer_epoch=0, base_sequence=5), 0, NOW)
    assert raised.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    reopened.append_as_leader(keyed([(b"a", b"3")], producer_id=7, producer_epoch=0, base_sequence=1), 0, NOW)
    reopened.close()


def test_the_batch_before_the_first_uncleanable_offset_stays_empty(tmp_path):
    """Kafka keeps it, emptied, so the offsets the cleaned section ends with are not lost."""
    log = compacted(str(tmp_path / "t-0"))
    append(log, [(b"a", b"1")])
    append(log, [(b"a", b"2")])
    append(log, [(None, b"keyless")])
    append(log, [(None, b"keyless")])
    settle(log)
    clean(log, NOW)
    assert contents(log) == [(1, b"a", b"2")]
    headers = [h for h, _ in scan_batches(log.read_bytes(0, 1 << 20))[0]]
    assert [(h.base_offset, h.records_count) for h in headers] == [(1, 1), (3, 0)]


def test_control_batches_stay_and_keyless_records_go(tmp_path):
    log = compacted(str(tmp_path / "t-0"))
    append(log, [(None, b"keyless"), (b"a", b"1")])
    marker = BatchBuilder(is_control=True, producer_id=3, producer_epoch=0)
    marker.append(NOW, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")
    log.append_as_leader(marker.build(), 0, NOW)
    append(log, [(b"a", b"2")])
    settle(log)
    stats = clean(log, NOW)
    assert stats.records_read == 4 and stats.records_written == 2 and stats.records_removed == 2
    headers = [h for h, _ in scan_batches(log.read_bytes(0, 1 << 20))[0]]
    assert [(h.base_offset, h.is_control) for h in headers] == [(2, True), (3, False)]


def test_compacted_logs_refuse_records_without_a_key_when_asked(tmp_path):
    log = compacted(str(tmp_path / "t-0"))
    for codec in (Compression.NONE, Compression.ZSTD):
        with pytest.raises(StorageError) as raised:
            log.append_as_leader(keyed([(b"a", b"1"), (None, b"2")], compression=codec), 0, NOW, check_keys=True)
        assert raised.value.code == ErrorCode.INVALID_RECORD
        assert "Compacted topic cannot accept message without key" in str(raised.value)
    assert log.log_end_offset == 0
    log.append_as_leader(keyed([(b"a", b"1"), (b"b", None)]), 0, NOW, check_keys=True)
    plain = Log(str(tmp_path / "u-0"), LogConfig(), NOW)
    plain.append_as_leader(keyed([(None, b"1")]), 0, NOW, check_keys=True)


def test_log_config_reads_the_compaction_keys():
    config = LogConfig.from_properties({
        "cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.25", "delete.retention.ms": "5",
        "min.compaction.lag.ms": "6", "max.compaction.lag.ms": "7"})
    assert config.compacts and config.deletes
    assert (config.min_cleanable_dirty_ratio, config.delete_retention_ms, config.min_compaction_lag_ms,
            config.max_compaction_lag_ms) == (0.25, 5, 6, 7)
    assert config.max_segment_ms == 7
    with pytest.raises(ValueError):
        LogConfig.from_properties({"min.compaction.lag.ms": "8", "max.compaction.lag.ms": "7"})


def test_a_full_offset_map_cleans_a_prefix_and_the_next_cleaning_goes_on(tmp_path):
    log = compacted(str(tmp_path / "t-0"), segment_bytes=200)
    written = []
    for round_ in range(3):
        for key in range(6):
            offset = append(log, [(b"k%d" % key, b"%d" % round_)])
            written.append((offset, b"k%d" % key, b"%d" % round_))
    settle(log)
    small = CleanerConfig(dedupe_buffer_size=4 * 160, dedupe_buffer_load_factor=1.0)
    stats = clean(log, NOW, small)
    assert stats.end_offset < log.active_segment.base_offset and log.cleaner_offset == stats.end_offset
    while clean(log, NOW, small) is not None:
        pass
    assert contents(log) == latest(written)


def test_a_dirty_section_without_batches_only_moves_the_checkpoint(tmp_path):
    """The first dirty segment may end, after a cleaning, below the checkpoint (here by hand)."""
    log = compacted(str(tmp_path / "t-0"), segment_bytes=250)
    for key in (b"a", b"x", b"y"):
        append(log, [(key, b"1")])
    append(log, [(b"x", b"2")])
    append(log, [(b"y", b"2")])
    settle(log)
    clean(log, NOW)
    assert [s.base_offset for s in log.segments] == [0, 3, 5]
    before = contents(log)
    assert before == [(0, b"a", b"1"), (3, b"x", b"2"), (4, b"y", b"2")]
    log.cleaner_offset, log.high_watermark = 1, 3
    cleaner = LogCleaner()
    stats = clean(log, NOW, cleaner=cleaner)
    assert stats is not None and stats.segments_read == 0 and log.cleaner_offset == 3
    assert contents(log) == before and log not in cleaner.uncleanable
