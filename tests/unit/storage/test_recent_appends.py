"""Reads of the log's tail served from the latest appends in memory: the same answer as from disk."""

from __future__ import annotations

from gregor.records.batch import set_base_offset
from gregor.storage.log import Log, LogConfig
from gregor.storage.recent_appends import MAX_BYTES, RecentAppends

from tests.unit.storage.helpers import NOW, batch


def from_disk(log: Log, fetch_offset: int, max_bytes: int, max_offset: int | None = None):
    """The read with nothing in memory: slices read back from the segment files."""
    recent, log._recent = log._recent, RecentAppends()
    try:
        info = log.read(fetch_offset, max_bytes, max_offset)
        return info.slices, b"".join(piece.read() for piece in info.slices)
    finally:
        log._recent = recent


def same_as_disk(log: Log, fetch_offset: int, max_bytes: int = 1 << 20, max_offset: int | None = None) -> bool:
    info = log.read(fetch_offset, max_bytes, max_offset)
    return (info.slices, info.read_bytes()) == from_disk(log, fetch_offset, max_bytes, max_offset)


def test_a_read_from_a_recent_append_to_the_log_end_is_served_from_memory(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(segment_bytes=2000), NOW)
    bases = [log.append_as_leader(batch(2, tag=b"a%d" % i), 0, NOW).first_offset for i in range(30)]
    assert len(log.segments) > 1
    assert log.read(bases[-3], 1 << 20).data is not None  # held in memory
    for base in bases:
        assert same_as_disk(log, base) and same_as_disk(log, base, max_bytes=150)
    assert same_as_disk(log, bases[-2], max_offset=bases[-1])  # below the log end: from the segment


def test_what_is_written_after_the_appends_makes_them_stale(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(), NOW)
    bases = [log.append_as_leader(batch(2, tag=b"a%d" % i), 0, NOW).first_offset for i in range(4)]
    log.truncate_to(bases[2])
    for i in range(2):  # the same offsets and sizes again, other records
        log.append_as_leader(batch(2, tag=b"b%d" % i), 1, NOW)
    assert same_as_disk(log, bases[2]) and same_as_disk(log, bases[3])
    replicated = bytearray(batch(1))
    set_base_offset(replicated, 0, log.log_end_offset)
    log.append_as_follower(replicated, NOW)  # this replica follows now
    assert log.read(bases[2], 1 << 20).data is None and same_as_disk(log, bases[2])


def test_past_max_bytes_the_oldest_appends_go_and_the_latest_still_answer(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(), NOW)
    bases = [log.append_as_leader(batch(1, value_size=10_000, tag=b"a%d" % i), 0, NOW).first_offset
             for i in range(300)]  # about three times what is kept
    kept = [base for base in bases if log.read(base, 1 << 30).data is not None]
    assert kept == bases[-len(kept):] and len(kept) > 50  # the latest ones, without a hole
    assert log.segments[-1].size - log.read(kept[0], 1 << 30).slices[0].position <= MAX_BYTES
    for base in bases[::23] + kept[:2]:
        assert same_as_disk(log, base, max_bytes=1 << 30)
