"""Property: any mix of appends, reads, rolls, DeleteRecords and reopens keeps the log exact."""

from __future__ import annotations

import shutil
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW, batch, index_is_consistent, records_of

CONFIG = LogConfig(segment_bytes=1600, index_interval_bytes=150)

appends = st.tuples(st.just("append"), st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 80))
reads = st.tuples(st.just("read"), st.floats(0, 1), st.integers(0, 3000))
others = st.sampled_from([("roll",), ("reopen_clean",), ("reopen_unclean",), ("delete_records",)])
operations = st.lists(st.one_of(appends, appends, reads, others), min_size=1, max_size=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_offsets_stay_contiguous_and_reads_return_what_was_appended(ops):
    root = tempfile.mkdtemp()
    directory = f"{root}/t-0"
    log = Log(directory, CONFIG, NOW)
    values: dict[int, bytes] = {}
    start = 0
    try:
        for step, op in enumerate(ops):
            if op[0] == "append":
                _, counts, size = op
                request = b"".join(batch(c, NOW + step, size, tag=b"s%d.%d" % (step, i)) for i, c in enumerate(counts))
                info = log.append_as_leader(request, 0, NOW + step)
                assert info.first_offset == len(values) and info.last_offset == info.first_offset + sum(counts) - 1
                for i, (_, value) in enumerate(records_of(request)):
                    values[info.first_offset + i] = value
                log.high_watermark = log.log_end_offset
            elif op[0] == "read":
                _, where, max_bytes = op
                if len(values) > start:
                    offset = start + int(where * (len(values) - start - 1))
                    got = records_of(log.read_bytes(offset, max_bytes))
                    assert got[0][0] <= offset <= got[-1][0]
                    assert [o for o, _ in got] == list(range(got[0][0], got[-1][0] + 1))
                    assert all(values[o] == v for o, v in got)
            elif op[0] == "roll":
                log.roll(NOW + step)
            elif op[0] == "delete_records":
                start = (start + len(values)) // 2
                assert log.delete_records_before(start) == start
            else:
                clean = op[0] == "reopen_clean"
                if clean:
                    log.close()
                log = Log(directory, CONFIG, NOW + step, log_start_offset=start, clean_shutdown=clean)
            assert log.log_end_offset == len(values) and log.log_start_offset == start
        index_is_consistent(log)
        everything = records_of(log.read_bytes(start, 10**9))
        assert [o for o, _ in everything][-1:] == ([len(values) - 1] if len(values) > start else [])
        assert all(values[o] == v for o, v in everything)
        for offset in range(start, len(values)):
            first = records_of(log.read_bytes(offset, 0))
            assert first[0][0] <= offset <= first[-1][0]
        log.close()
    finally:
        shutil.rmtree(root)
