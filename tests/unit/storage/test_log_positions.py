"""Log positions: counting the bytes a read would return without reading them (what a waiting
fetch uses), checked against the read itself, and refused once the log changed under a position."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW, batch


def _log(path, **config) -> Log:
    return Log(str(path), LogConfig(**{"segment_bytes": 600, "index_interval_bytes": 150, **config}), NOW)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=25), st.data())
def test_bytes_between_is_what_a_read_returns(tmp_path_factory, counts, data):
    log = _log(tmp_path_factory.mktemp("log") / "t-0")
    for count in counts:
        log.append_as_leader(batch(count, value_size=data.draw(st.integers(0, 80))), 0, NOW)
    end = log.log_end_offset
    start = data.draw(st.integers(0, end))
    bound = data.draw(st.integers(0, end + 3))
    position = log.offset_position(start)
    assert log.bytes_between(position, bound) == log.read(start, 1 << 30, bound).size
    assert log.offset_position(start) == position, "asked again (the memo): the same answer"


def test_the_log_end_needs_no_lookup_and_appends_count_from_a_position_taken_before(tmp_path):
    log = _log(tmp_path / "t-0")
    log.append_as_leader(batch(2), 0, NOW)
    at_end = log.offset_position(log.log_end_offset)
    assert at_end.position == log.active_segment.size
    sizes = [len(batch(1, value_size=40)) for _ in range(12)]
    for _ in sizes:
        log.append_as_leader(batch(1, value_size=40), 0, NOW)
    assert len(log.segments) > 1, "the appends rolled: the count spans segments"
    assert log.bytes_between(at_end, log.log_end_offset) == sum(sizes)
    assert log.bytes_between(at_end, at_end.offset) == 0


def test_a_position_the_log_changed_under_is_not_counted(tmp_path):
    log = _log(tmp_path / "t-0")
    for _ in range(12):
        log.append_as_leader(batch(1, value_size=40), 0, NOW)
    log.high_watermark = log.log_end_offset
    first = log.offset_position(0)
    late = log.offset_position(10)
    assert log.bytes_between(late, 12) > 0
    log.truncate_to(9)
    assert log.bytes_between(late, 12) is None, "truncated below it"
    log.delete_records_before(log.segments[1].base_offset)
    assert log.bytes_between(first, 5) is None, "the log start passed it"
    at_end = log.offset_position(log.log_end_offset)
    log.truncate_fully_and_start_at(log.log_end_offset)
    assert at_end.offset == log.log_end_offset and log.bytes_between(at_end, 20) is None, "its segment went"
