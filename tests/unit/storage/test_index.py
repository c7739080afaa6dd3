"""Offset and time indexes: Kafka's entry formats, floor lookups, truncation, sanity checks."""

from __future__ import annotations

import os
import struct

from gregor.storage.offset_index import OffsetIndex
from gregor.storage.time_index import TimeIndex


def test_offset_index_entries_are_kafkas_8_byte_format_and_lookup_is_a_floor(tmp_path):
    path = str(tmp_path / "00000000000000000100.index")
    index = OffsetIndex(path, 100, 1 << 20)
    index.append(110, 4100)
    index.append(125, 8300)
    with open(path, "rb") as handle:
        assert handle.read() == struct.pack(">iiii", 10, 4100, 25, 8300)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(109) == (100, 0)
    assert index.lookup(110) == (110, 4100)
    assert index.lookup(124) == (110, 4100)
    assert index.lookup(10**9) == (125, 8300)
    assert index.lookup_by_position(8299) == (110, 4100)
    assert index.lookup_by_position(100) == (100, 0)


def test_offset_index_reload_truncate_and_sanity(tmp_path):
    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0, 1 << 20)
    for i in range(1, 6):
        index.append(i * 10, i * 1000)
    index.truncate_to(30)
    assert list(index.offsets) == [10, 20]
    assert os.path.getsize(path) == 16
    index.close()
    reloaded = OffsetIndex(path, 0, 1 << 20)
    assert reloaded.load(log_size=5000) and list(reloaded.positions) == [1000, 2000]
    assert not OffsetIndex(path, 0, 1 << 20).load(log_size=1500), "entry beyond the log"
    with open(path, "ab") as handle:
        handle.write(b"\x00\x00\x00")
    assert not OffsetIndex(path, 0, 1 << 20).load(log_size=5000), "partial entry"
    with open(path, "wb") as handle:
        handle.write(struct.pack(">iiii", 20, 2000, 10, 3000))
    assert not OffsetIndex(path, 0, 1 << 20).load(log_size=5000), "decreasing offsets"


def test_offset_index_is_full_at_segment_index_bytes(tmp_path):
    index = OffsetIndex(str(tmp_path / "0.index"), 0, 24)
    for i in range(1, 4):
        assert not index.is_full
        index.append(i, i * 10)
    assert index.is_full


def test_time_index_entries_and_lookup(tmp_path):
    path = str(tmp_path / "00000000000000000050.timeindex")
    index = TimeIndex(path, 50, 1 << 20)
    index.maybe_append(1000, 55)
    index.maybe_append(1000, 58)
    index.maybe_append(900, 59)
    index.maybe_append(2000, 70)
    with open(path, "rb") as handle:
        assert handle.read() == struct.pack(">qiqi", 1000, 5, 2000, 20)
    assert index.lookup(500) == 50
    assert index.lookup(1000) == 50
    assert index.lookup(1001) == 55
    assert index.lookup(5000) == 70
    assert index.last_entry == (2000, 70)
    index.truncate_to(60)
    assert index.last_entry == (1000, 55)
    index.close()
    reloaded = TimeIndex(path, 50, 1 << 20)
    assert reloaded.load() and list(reloaded.timestamps) == [1000]
