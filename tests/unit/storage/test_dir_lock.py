"""The data-directory lock: exclusive across processes and within one, all or none of a node's
directories, nothing written into the directory by a process that is refused."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gregor.storage.dir_lock import DirectoryLock, DirectoryLockedError, DirectoryLocks


def test_a_second_lock_in_the_same_process_is_refused_until_the_first_is_released(tmp_path):
    first = DirectoryLock(str(tmp_path))
    first.acquire()
    with pytest.raises(DirectoryLockedError, match=f"another broker \\(pid {os.getpid()}\\) is using"):
        DirectoryLock(str(tmp_path)).acquire()
    first.release()
    second = DirectoryLock(str(tmp_path))
    second.acquire()
    assert second.held
    second.release()


def test_another_process_is_refused_and_named(tmp_path):
    held = DirectoryLock(str(tmp_path))
    held.acquire()
    script = ("import sys\nfrom gregor.storage.dir_lock import DirectoryLock, DirectoryLockedError\n"
              "try:\n    DirectoryLock(sys.argv[1]).acquire()\nexcept DirectoryLockedError as e:\n"
              "    print(e)\n    sys.exit(3)\n")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                            timeout=30)
    held.release()
    assert result.returncode == 3
    assert result.stdout.strip() == (f"failed to acquire lock on {tmp_path / '.lock'}: another broker "
                                     f"(pid {os.getpid()}) is using the data directory {tmp_path}")


def test_a_refused_process_leaves_the_lock_file_as_it_was(tmp_path):
    held = DirectoryLock(str(tmp_path))
    held.acquire()
    before = os.stat(tmp_path / ".lock")
    with pytest.raises(DirectoryLockedError):
        DirectoryLock(str(tmp_path)).acquire()
    after = os.stat(tmp_path / ".lock")
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns) == (0, before.st_mtime_ns)
    held.release()


def test_locks_are_taken_all_or_none(tmp_path):
    busy = DirectoryLock(str(tmp_path / "b"))
    busy.acquire()
    locks = DirectoryLocks([str(tmp_path / "a"), str(tmp_path / "b")])
    with pytest.raises(DirectoryLockedError):
        locks.acquire()
    released = DirectoryLock(str(tmp_path / "a"))  # "a" was released when "b" was refused
    released.acquire()
    released.release()
    busy.release()


def test_the_same_directory_named_twice_is_locked_once(tmp_path):
    locks = DirectoryLocks([str(tmp_path), str(tmp_path) + "/", str(tmp_path / "x" / "..")])
    locks.acquire()
    locks.release()
