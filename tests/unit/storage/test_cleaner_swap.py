"""Swapping cleaned segments in: crashes at every step, concurrent appends and reads, races, checkpoints."""

from __future__ import annotations

import os
import threading

import pytest

from gregor.storage.checkpoint import read_checkpoint
from gregor.storage.cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleaner
from gregor.storage.cleaning import CleanerError, CleaningAborted
from gregor.storage.log import Log, LogConfig
from gregor.storage.log_manager import LogManager
from gregor.storage.segment import CLEANED_SUFFIX, SWAP_SUFFIX

from tests.unit.storage.cleaner_helpers import append, clean, compacted, contents, latest, settle
from tests.unit.storage.helpers import NOW, index_is_consistent


class Crash(Exception):
    """Stands for the process dying at this point."""


def filled(directory: str, **config: object) -> tuple[Log, list]:
    """Six keys written four times over several segments, all committed and non-active."""
    log = compacted(directory, **{"segment_bytes": 260, **config})
    written = []
    for round_ in range(4):
        for key in range(6):
            offset = append(log, [(b"k%d" % key, b"v%d" % round_)])
            written.append((offset, b"k%d" % key, b"v%d" % round_))
    settle(log)
    return log, written


def leftovers(directory: str) -> list[str]:
    return [n for n in os.listdir(directory) if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]


def count_renames(tmp_path, monkeypatch) -> int:
    log, _ = filled(str(tmp_path / "count-0"))
    cleaner = LogCleaner()
    task = cleaner.begin([log], NOW)
    task.run()
    calls = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda *args: calls.append(args) or real(*args))
    cleaner.finish(task, NOW)
    monkeypatch.undo()
    return len(calls)


def test_leftover_cleaned_files_are_deleted_at_load(tmp_path):
    directory = str(tmp_path / "t-0")
    log, written = filled(directory)
    before = contents(log)
    task = LogCleaner().begin([log], NOW)
    task.run()
    assert any(n.endswith(".log" + CLEANED_SUFFIX) for n in os.listdir(directory))
    reopened = Log(directory, log.config, NOW)
    assert leftovers(directory) == [] and contents(reopened) == before
    index_is_consistent(reopened)


def test_a_crash_anywhere_in_the_swap_leaves_a_consistent_log(tmp_path, monkeypatch):
    """Crash after each rename in turn: the reopened log holds everything the cleaned log holds, only
    records of the original log, and the latest value of every key, at unchanged offsets."""
    renames = count_renames(tmp_path, monkeypatch)
    assert renames >= 12
    for crash_at in range(renames):
        directory = str(tmp_path / f"t-{crash_at}")
        log, written = filled(directory)
        before = set(contents(log))
        cleaner = LogCleaner()
        task = cleaner.begin([log], NOW)
        task.run()
        calls = []
        real = os.replace

        def crashing(*args: str) -> None:
            if len(calls) == crash_at:
                raise Crash()
            calls.append(args)
            real(*args)

        monkeypatch.setattr(os, "replace", crashing)
        with pytest.raises(Crash):
            cleaner.finish(task, NOW)
        monkeypatch.undo()
        reopened = Log(directory, log.config, NOW)
        assert leftovers(directory) == []
        index_is_consistent(reopened)
        found = contents(reopened)
        assert set(latest(written)) <= set(found) <= before and found == sorted(found)
        assert (found == sorted(before)) == (crash_at < 3), "a group whose 3 files are .swap completes at load"
        assert reopened.log_end_offset == log.log_end_offset
        assert append(reopened, [(b"k0", b"after")]) == log.log_end_offset
        reopened.close()


def test_a_swap_left_behind_completes_at_load(tmp_path):
    directory = str(tmp_path / "t-0")
    log, written = filled(directory, segment_bytes=10_000)
    task = LogCleaner().begin([log], NOW)
    task.run()
    (old, new), = task.replacements
    new.rename_suffix(SWAP_SUFFIX)
    old[0].mark_deleted(NOW)
    reopened = Log(directory, log.config, NOW)
    assert leftovers(directory) == [] and not any(n.endswith(".deleted") for n in os.listdir(directory))
    assert contents(reopened) == latest(written)
    index_is_consistent(reopened)


def test_a_read_taken_before_the_swap_still_reads_its_bytes(tmp_path):
    log, _ = filled(str(tmp_path / "t-0"), file_delete_delay_ms=1000)
    before = log.read(0, 1 << 20)
    expected = before.read_bytes()
    clean(log, NOW)
    assert contents(log) != [] and before.read_bytes() == expected
    log.apply_retention(NOW + 1000)
    with pytest.raises(ValueError):
        before.slices[0].fileno()


def test_appends_and_reads_go_on_while_a_worker_thread_cleans(tmp_path):
    log, written = filled(str(tmp_path / "t-0"))
    snapshot_end = log.log_end_offset
    cleaner = LogCleaner()
    task = cleaner.begin([log], NOW)
    worker = threading.Thread(target=task.run)
    worker.start()
    for i in range(200):
        offset = append(log, [(b"k%d" % (i % 6), b"w%d" % i)])
        written.append((offset, b"k%d" % (i % 6), b"w%d" % i))
        assert log.read_bytes(0, 1 << 20)
    worker.join()
    stats = cleaner.finish(task, NOW)
    assert stats is not None and stats.end_offset == snapshot_end
    index_is_consistent(log)
    found = contents(log)
    assert [e for e in found if e[0] < snapshot_end] == latest(written[:snapshot_end])
    assert [e for e in found if e[0] >= snapshot_end] == written[snapshot_end:]
    settle(log)
    clean(log, NOW, cleaner=cleaner)
    assert contents(log) == latest(written)


def test_segments_deleted_meanwhile_are_not_swapped_back(tmp_path):
    log, written = filled(str(tmp_path / "t-0"), segment_bytes=200, file_delete_delay_ms=0)
    cleaner = LogCleaner()
    task = cleaner.begin([log], NOW)
    task.run()
    assert len(task.replacements) >= 2
    first_group_end = task.replacements[1][0][0].base_offset
    log.delete_records_before(first_group_end)
    log.apply_retention(NOW)
    assert cleaner.finish(task, NOW) is not None
    assert leftovers(log.directory) == []
    assert log.segments[0].base_offset == first_group_end
    assert contents(log) == [e for e in latest(written) if e[0] >= first_group_end]


def test_a_truncation_meanwhile_voids_the_cleaning(tmp_path):
    log, _ = filled(str(tmp_path / "t-0"))
    cleaner = LogCleaner()
    task = cleaner.begin([log], NOW)
    task.run()
    log.truncate_to(5)
    assert log.cleaner_offset == 0
    assert cleaner.finish(task, NOW) is None and leftovers(log.directory) == []
    assert [o for o, _, _ in contents(log)] == list(range(5)) and log not in cleaner.uncleanable


def test_an_aborted_task_stops_and_leaves_nothing(tmp_path):
    log, _ = filled(str(tmp_path / "t-0"))
    before = contents(log)
    cleaner = LogCleaner()
    task = cleaner.begin([log], NOW)
    cleaner.abort(log)
    with pytest.raises(CleaningAborted):
        task.run()
    assert cleaner.finish(task, NOW) is None
    assert leftovers(log.directory) == [] and contents(log) == before and log not in cleaner.uncleanable


def test_a_corrupt_segment_makes_the_log_uncleanable(tmp_path):
    log, _ = filled(str(tmp_path / "t-0"))
    with open(log.segments[1].path, "r+b") as handle:
        handle.seek(70)
        handle.write(b"\xff")
    cleaner = LogCleaner()
    task = cleaner.begin([log], NOW)
    with pytest.raises(CleanerError):
        task.run()
    assert cleaner.finish(task, NOW) is None and log in cleaner.uncleanable
    assert cleaner.begin([log], NOW) is None and leftovers(log.directory) == []


def test_the_cleaner_checkpoint_is_written_and_read_back(tmp_path):
    config = LogConfig(cleanup_policy="compact", segment_bytes=260, min_cleanable_dirty_ratio=0.0)
    data = str(tmp_path / "data")
    manager = LogManager([data], LogConfig(), NOW, {"c": config})
    log = manager.create_log("c", 0, config, NOW)
    manager.create_log("d", 0, None, NOW)
    for i in range(20):
        append(log, [(b"k%d" % (i % 3), b"%d" % i)])
    settle(log)
    stats = manager.clean_once(NOW)
    assert stats is not None and stats.end_offset == log.active_segment.base_offset
    assert read_checkpoint(os.path.join(data, CLEANER_OFFSET_CHECKPOINT)) == {("c", 0): stats.end_offset}
    assert manager.clean_once(NOW) is None, "nothing is dirty"
    manager.shutdown(NOW)
    reopened = LogManager([data], LogConfig(), NOW, {"c": config})
    assert reopened.get_log("c", 0).cleaner_offset == stats.end_offset
    truncated = reopened.get_log("c", 0)
    truncated.truncate_to(stats.end_offset - 1)
    assert truncated.cleaner_offset == truncated.log_end_offset < stats.end_offset
    reopened.checkpoint()
    assert read_checkpoint(os.path.join(data, CLEANER_OFFSET_CHECKPOINT)) == {("c", 0): truncated.log_end_offset}


def test_deleting_a_log_aborts_its_cleaning(tmp_path):
    config = LogConfig(cleanup_policy="compact", segment_bytes=260, min_cleanable_dirty_ratio=0.0)
    manager = LogManager([str(tmp_path / "data")], LogConfig(), NOW, {"c": config})
    log = manager.create_log("c", 0, config, NOW)
    for i in range(20):
        append(log, [(b"k%d" % (i % 3), b"%d" % i)])
    settle(log)
    task = manager.begin_cleaning(NOW)
    assert manager.delete_log("c", 0)
    with pytest.raises(CleaningAborted):
        task.run()
    assert manager.finish_cleaning(task, NOW) is None
    assert not os.path.exists(log.directory)
