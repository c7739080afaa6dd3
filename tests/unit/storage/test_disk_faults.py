"""Disk faults the other storage tests do not cover (torn tails, corrupt batches and lost indexes
are in test_recovery.py): a full disk in the middle of a write, and a power loss that drops every
write not yet fsynced."""

from __future__ import annotations

import errno
import os

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.storage import segment as segment_module
from gregor.storage.errors import StorageError
from gregor.storage.log import Log, LogConfig
from tests.unit.storage.helpers import NOW, batch, records_of
from tests.unit.storage.test_recovery import reads_are_consistent

CONFIG = LogConfig(segment_bytes=3000, index_interval_bytes=250)


class FullDisk:
    """os.pwrite for segments: writes `room` more bytes, then fails with ENOSPC until space returns."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.full = True
        self._pwrite = os.pwrite

    def __call__(self, fd: int, data, offset: int) -> int:
        if not self.full:
            return self._pwrite(fd, data, offset)
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = self._pwrite(fd, bytes(data[:self.room]), offset)
        self.room -= written
        return written


@pytest.mark.parametrize("clean_shutdown", [True, False])
def test_a_full_disk_refuses_the_write_and_the_log_carries_on_when_space_returns(tmp_path, monkeypatch,
                                                                                 clean_shutdown):
    directory = str(tmp_path / "t-0")
    log = Log(directory, CONFIG, NOW)
    for i in range(3):
        log.append_as_leader(batch(5, NOW + i, 20), 0, NOW)
    end = log.log_end_offset
    disk = FullDisk(room=len(batch(5, NOW, 200)) // 2)  # half of the next batch fits
    monkeypatch.setattr(segment_module.os, "pwrite", disk)
    for _ in range(2):
        with pytest.raises(StorageError) as refused:
            log.append_as_leader(batch(5, NOW, 200), 0, NOW)
        assert refused.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert log.log_end_offset == end
    disk.full = False
    assert log.append_as_leader(batch(1, NOW, 5, tag=b"after"), 0, NOW).first_offset == end
    reads_are_consistent(log)
    log.flush(NOW)
    log.close()
    reopened = Log(directory, CONFIG, NOW, recovery_point=0, clean_shutdown=clean_shutdown)
    assert reopened.log_end_offset == end + 1
    reads_are_consistent(reopened)
    assert records_of(reopened.read_bytes(end, 1 << 20))[-1][1].startswith(b"after")
    assert reopened.append_as_leader(batch(), 0, NOW).first_offset == end + 1


class PowerLossDisk:
    """A file system that keeps, across a power loss, only what was fsynced: a file's contents as
    of its last fsync (empty if never), a directory's entries as of its last fsync (all of them
    if never, which is kinder than POSIX promises)."""

    def __init__(self) -> None:
        self.contents: dict[int, bytes] = {}  # inode -> durable contents
        self.entries: dict[str, dict[str, int]] = {}  # directory -> durable name -> inode
        self._fsync = os.fsync

    def __call__(self, fd: int) -> None:
        self._fsync(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        if os.path.isdir(path):
            self.entries[path] = {name: os.stat(os.path.join(path, name)).st_ino for name in os.listdir(path)}
        else:
            with open(path, "rb") as handle:  # fd may be write-only
                self.contents[os.fstat(fd).st_ino] = handle.read()

    def lose_power(self, directory: str) -> None:
        durable = self.entries.get(directory)
        for name in os.listdir(directory):
            path = os.path.join(directory, name)
            inode = os.stat(path).st_ino
            if durable is not None and durable.get(name) != inode:
                os.remove(path)  # created or renamed here after the directory's last fsync
                continue
            with open(path, "wb") as handle:
                handle.write(self.contents.get(inode, b""))


def test_a_power_loss_keeps_everything_fsynced_and_recovers_to_a_whole_batch(tmp_path, monkeypatch):
    directory = str(tmp_path / "t-0")
    disk = PowerLossDisk()
    monkeypatch.setattr(os, "fsync", disk)
    log = Log(directory, CONFIG, NOW)
    for i in range(40):  # several rolls, each fsyncing the finished segment and the directory
        log.append_as_leader(batch(5, NOW + i, 20), 0, NOW)
    log.flush(NOW)
    flushed = log.log_end_offset
    for i in range(7):
        log.append_as_leader(batch(5, NOW + i, 20), 0, NOW)
    expected = records_of(log.read_bytes(0, 1 << 30))[:flushed]
    disk.lose_power(directory)  # the process dies with the machine: nothing closed, nothing written
    reopened = Log(directory, CONFIG, NOW, recovery_point=0, clean_shutdown=False)
    assert flushed <= reopened.log_end_offset <= flushed + 35
    reads_are_consistent(reopened)
    assert records_of(reopened.read_bytes(0, 1 << 30))[:flushed] == expected
    assert reopened.append_as_leader(batch(), 0, NOW).first_offset == reopened.log_end_offset - 1
