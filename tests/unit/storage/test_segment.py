"""LogSegment: append, file-slice reads of whole batches, index entries, timestamps, truncation."""

from __future__ import annotations

import os
import random

import pytest

from gregor.records.batch import parse_header, set_base_offset
from gregor.storage.segment import LogSegment

from tests.unit.storage.helpers import NOW, batch, records_of


def fill(segment: LogSegment, count: int, records_per_batch: int = 3, value_size: int = 100,
         timestamp_step: int = 10, gaps: random.Random | None = None) -> list[tuple[int, int]]:
    """Append `count` batches one by one; returns (base offset, position) of each. With `gaps`,
    some batches start a few offsets after the previous one ends, as in a compacted log."""
    starts = []
    offset = segment.next_offset
    for i in range(count):
        if gaps is not None and gaps.random() < 0.3:
            offset += gaps.randint(1, 3)
        data = bytearray(batch(records_per_batch, NOW + i * timestamp_step, value_size))
        set_base_offset(data, 0, offset)
        header = parse_header(data)
        starts.append((offset, segment.size))
        segment.append(data, [(offset, header.last_offset, header.size, header.max_timestamp)], NOW)
        offset = header.last_offset + 1
    return starts


def test_file_names_and_append_track_offsets_and_size(tmp_path):
    segment = LogSegment(str(tmp_path), 42, 4096, 1 << 20, NOW)
    assert os.path.basename(segment.path) == "00000000000000000042.log"
    assert os.path.exists(str(tmp_path / "00000000000000000042.log"))
    starts = fill(segment, 4)
    assert segment.next_offset == 42 + 12
    assert segment.size == os.path.getsize(segment.path)
    assert [s[0] for s in starts] == [42, 45, 48, 51]
    assert segment.max_timestamp == NOW + 30
    assert segment.rolling_base_timestamp == NOW


def test_index_entry_every_index_interval_bytes(tmp_path):
    segment = LogSegment(str(tmp_path), 0, 1000, 1 << 20, NOW)
    starts = fill(segment, 30, records_per_batch=2, value_size=150)
    batch_size = starts[1][1]
    expected = []
    since = 0
    for offset, position in starts:
        if since > 1000:
            expected.append((offset, position))
            since = 0
        since += batch_size
    assert list(zip(segment.offset_index.offsets, segment.offset_index.positions)) == expected
    assert len(expected) >= 5
    assert len(segment.time_index.offsets) == len(expected)


def test_read_returns_whole_batches_from_the_one_holding_the_offset(tmp_path):
    segment = LogSegment(str(tmp_path), 0, 500, 1 << 20, NOW)
    starts = fill(segment, 20)
    batch_size = starts[1][1]
    for offset in range(segment.next_offset):
        piece = segment.read(offset, 1, segment.size, True)
        assert piece.position == starts[offset // 3][1] and piece.length == batch_size
        first = records_of(piece.read())
        assert first[0][0] <= offset <= first[-1][0]
    piece = segment.read(7, batch_size * 3 + 5, segment.size, True)
    assert piece.length == batch_size * 3
    assert segment.read(7, batch_size - 1, segment.size, False) is None
    assert segment.read(segment.next_offset, 10**6, segment.size, True) is None
    bound = segment.position_bound(30)
    assert bound == starts[10][1]
    whole = segment.read(0, 10**9, bound, True)
    assert records_of(whole.read())[-1][0] == 29


def test_find_offset_by_timestamp_decodes_only_the_batch_reaching_it(tmp_path):
    segment = LogSegment(str(tmp_path), 0, 300, 1 << 20, NOW)
    fill(segment, 20, timestamp_step=10)
    assert segment.find_offset_by_timestamp(NOW, 0, 1 << 20) == (0, NOW)
    assert segment.find_offset_by_timestamp(NOW + 55, 0, 1 << 20) == (18, NOW + 60)
    assert segment.find_offset_by_timestamp(NOW + 60, 0, 1 << 20) == (18, NOW + 60)
    assert segment.find_offset_by_timestamp(NOW + 60, 20, 1 << 20) == (20, NOW + 60)
    assert segment.find_offset_by_timestamp(NOW + 10**6, 0, 1 << 20) is None
    assert segment.max_timestamp_record(1 << 20) == (57, NOW + 190)


def test_truncate_to_removes_the_batch_holding_the_offset_and_later(tmp_path):
    segment = LogSegment(str(tmp_path), 0, 300, 1 << 20, NOW)
    starts = fill(segment, 20)
    removed = segment.truncate_to(31)
    assert segment.next_offset == 30 and segment.size == starts[10][1] and removed > 0
    assert os.path.getsize(segment.path) == segment.size
    assert all(offset < 30 for offset in segment.offset_index.offsets)
    assert segment.max_timestamp == NOW + 90
    fill(segment, 1)
    assert segment.next_offset == 33


def test_load_trusts_sane_indexes_and_rejects_ones_past_the_log(tmp_path):
    segment = LogSegment(str(tmp_path), 0, 300, 1 << 20, NOW)
    fill(segment, 20)
    segment.close()
    reopened = LogSegment(str(tmp_path), 0, 300, 1 << 20, NOW)
    assert reopened.load()
    assert reopened.next_offset == 60 and reopened.max_timestamp == NOW + 190
    reopened.close()
    os.truncate(reopened.path, reopened.offset_index.positions[-1])
    truncated = LogSegment(str(tmp_path), 0, 300, 1 << 20, NOW)
    assert not truncated.load()
    assert truncated.recover() == 0
    assert truncated.offset_index.positions[-1] < truncated.size


def _walked(segment: LogSegment, offset: int):
    """find() as the sparse index and a header walk alone answer it (the reference)."""
    _, position = segment.offset_index.lookup(offset)
    return next(((p, h.base_offset, h.size) for p, h in segment.batches(position) if h.last_offset >= offset), None)


@pytest.mark.parametrize("index_interval", [700, 1 << 16])
@pytest.mark.parametrize("seed", range(3))
def test_find_near_the_log_end_agrees_with_the_index_walk_through_appends_truncation_and_reload(
        tmp_path, index_interval, seed):
    """Reads near the end take the positions of the batches appended since the last index entry,
    from the file (find) or from memory alone (locate, base_offset_at); they must answer exactly
    what the index and a walk answer, whatever happened to the segment, gaps between batches too."""
    rng = random.Random(seed)
    segment = LogSegment(str(tmp_path), 0, index_interval, 1 << 20, NOW)

    def check() -> None:
        for offset in range(0, segment.next_offset + 2):
            walked = _walked(segment, offset)
            found = segment.find(offset)
            assert (None if found is None else (found[0], found[1].base_offset, found[1].size)) == walked, offset
            assert segment.locate(offset) == (None if walked is None else (walked[0], walked[2])), offset
        for position, header in segment.batches():
            assert segment.base_offset_at(position) == header.base_offset, position
        assert segment.base_offset_at(segment.size) is None

    for step in range(12):
        fill(segment, rng.randint(1, 15), records_per_batch=rng.randint(1, 4), value_size=rng.randint(10, 200),
             gaps=rng)
        check()
        if step % 3 == 1:
            segment.truncate_to(rng.randrange(segment.next_offset))
            check()
        if step % 4 == 2:
            segment.close()
            segment = LogSegment(str(tmp_path), 0, index_interval, 1 << 20, NOW)
            assert segment.load() or segment.recover() == 0
            check()
    assert segment._tail_offsets, "the last appends are remembered"


def test_batches_just_before_the_last_index_entry_are_located_without_reading_the_file(tmp_path, monkeypatch):
    """A caught-up consumer reads from where the followers were a moment ago: an index entry
    added meanwhile must not send its read back to walking headers from the entry before."""
    segment = LogSegment(str(tmp_path), 0, 1000, 1 << 20, NOW)
    starts = fill(segment, 40, records_per_batch=1, value_size=100)
    last_entry = segment.offset_index.offsets[-1]
    before = [(offset, position) for offset, position in starts if offset < last_entry][-5:]

    def no_reads(*args):
        raise AssertionError("read the file")
    monkeypatch.setattr(os, "pread", no_reads)
    for offset, position in before:
        assert segment.locate(offset)[0] == position
        assert segment.base_offset_at(position) == offset
