"""LogManager: loading log dirs, checkpoints, clean-shutdown marker, deletion, periodic tasks."""

from __future__ import annotations

import os

from gregor.storage.checkpoint import read_checkpoint, write_checkpoint
from gregor.storage.log import LogConfig
from gregor.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager

from tests.unit.storage.helpers import NOW, batch

DEFAULT = LogConfig(segment_bytes=1500)


def test_checkpoint_files_round_trip_in_kafkas_text_format(tmp_path):
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    offsets = {("orders", 0): 15, ("orders", 1): 0, ("my.topic-x", 12): 123456789012}
    write_checkpoint(path, offsets)
    with open(path, encoding="utf-8") as handle:
        assert handle.read().splitlines() == ["0", "3", "my.topic-x 12 123456789012", "orders 0 15", "orders 1 0"]
    assert read_checkpoint(path) == offsets
    assert not os.path.exists(path + ".tmp")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("0\n3\norders 0 15\n")
    assert read_checkpoint(path) == {}
    assert read_checkpoint(str(tmp_path / "missing")) == {}


def test_create_append_shutdown_and_reload(tmp_path):
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager = LogManager(dirs, DEFAULT, NOW)
    logs = [manager.create_log("orders", p, None, NOW) for p in range(4)]
    assert sorted(os.path.dirname(log.directory) for log in logs) == sorted(dirs * 2)
    assert manager.create_log("orders", 0, None, NOW) is logs[0]
    for log in logs:
        for _ in range(10):
            log.append_as_leader(batch(3, value_size=50), 0, NOW)
        log.high_watermark = log.log_end_offset
    logs[1].delete_records_before(20)
    manager.shutdown(NOW)
    for directory in dirs:
        assert os.path.exists(os.path.join(directory, CLEAN_SHUTDOWN_FILE))
    reloaded = LogManager(dirs, DEFAULT, NOW, topic_configs={"orders": LogConfig(segment_bytes=999)})
    assert reloaded.clean_shutdown
    assert not any(os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE)) for d in dirs)
    log = reloaded.get_log("orders", 1)
    assert log.log_start_offset == 20 and log.log_end_offset == 30 and log.recovery_point == 30
    assert log.config.segment_bytes == 999
    assert {(l.topic, l.partition) for l in reloaded.all_logs()} == {("orders", p) for p in range(4)}
    assert reloaded.get_log("orders", 9) is None


def test_missing_marker_means_recovery_from_the_checkpointed_recovery_point(tmp_path):
    dirs = [str(tmp_path / "a")]
    manager = LogManager(dirs, DEFAULT, NOW)
    log = manager.create_log("t", 0, None, NOW)
    for _ in range(20):
        log.append_as_leader(batch(3, value_size=50), 0, NOW)
    manager.checkpoint()
    points = read_checkpoint(os.path.join(dirs[0], "recovery-point-offset-checkpoint"))
    assert points == {("t", 0): log.recovery_point} and log.recovery_point > 0
    with open(log.active_segment.path, "ab") as handle:
        handle.write(b"\x00" * 30)
    reloaded = LogManager(dirs, DEFAULT, NOW)
    assert not reloaded.clean_shutdown
    recovered = reloaded.get_log("t", 0)
    assert recovered.truncated_bytes_at_load == 30 and recovered.log_end_offset == 60


def test_delete_log_and_leftover_delete_dirs(tmp_path):
    dirs = [str(tmp_path / "a")]
    manager = LogManager(dirs, DEFAULT, NOW)
    log = manager.create_log("gone", 0, None, NOW)
    log.append_as_leader(batch(), 0, NOW)
    assert manager.delete_log("gone", 0)
    assert not manager.delete_log("gone", 0)
    assert os.listdir(dirs[0]) == []
    os.makedirs(os.path.join(dirs[0], "old-3.0123456789abcdef-delete"))
    os.makedirs(os.path.join(dirs[0], "__cluster_metadata-0"))
    os.makedirs(os.path.join(dirs[0], "not_a_partition"))
    reloaded = LogManager(dirs, DEFAULT, NOW, skip={"__cluster_metadata-0"})
    assert reloaded.all_logs() == []
    assert sorted(os.listdir(dirs[0])) == ["__cluster_metadata-0", "not_a_partition"]


def test_cleanup_and_flush_dirty(tmp_path):
    manager = LogManager([str(tmp_path / "a")], LogConfig(segment_bytes=500, retention_ms=1000, flush_ms=100), NOW)
    log = manager.create_log("t", 0, None, NOW)
    for _ in range(10):
        log.append_as_leader(batch(3, value_size=50), 0, NOW)
    log.high_watermark = log.log_end_offset
    manager.flush_dirty(NOW + 50)
    assert log.recovery_point < log.log_end_offset
    manager.flush_dirty(NOW + 100)
    assert log.recovery_point == log.log_end_offset
    segments = len(log.segments)
    assert manager.cleanup(NOW + 1001) == segments
    assert log.log_start_offset == log.log_end_offset == 30
