"""The exclusive lock on a data directory (Kafka's `.lock` file in each log dir).

Two processes on one directory would each recover, append to and truncate the same segments:
records one of them acknowledged are overwritten by the other. A broker therefore takes an
exclusive `flock` on `<dir>/.lock` for every log dir and the metadata log dir before it reads or
writes anything there, holds it for the life of the process (the kernel drops it when the process
dies, kill -9 included) and refuses to start when another process holds it.

Nothing is ever written into the file (as in Kafka, it stays empty): a process that fails to take
the lock leaves the directory byte for byte as it was. The refusal names the holder's pid where
the kernel tells it (`/proc/locks`, on Linux).
"""

from __future__ import annotations

import fcntl
import os
from typing import Iterable

LOCK_FILE = ".lock"


class DirectoryLockedError(Exception):
    """Another process (or another broker in this one) holds a data directory's lock."""


class DirectoryLock:
    """An exclusive lock on one directory, held until `release()`."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(os.fstat(fd))
            os.close(fd)
            raise DirectoryLockedError(
                f"failed to acquire lock on {path}: another broker{holder} is using the data directory "
                f"{self.directory}") from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def _holder(stat: os.stat_result) -> str:
    """` (pid N)` when the kernel's lock table names the process holding the file, else nothing."""
    wanted = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii") as table:
            for line in table:
                fields = line.split()
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == wanted:
                    return f" (pid {fields[4]})"
    except OSError:
        pass
    return ""


class DirectoryLocks:
    """The locks on all of a node's data directories, taken together or not at all."""

    def __init__(self, directories: Iterable[str]) -> None:
        self._locks = [DirectoryLock(directory)
                       for directory in dict.fromkeys(os.path.abspath(d) for d in directories)]

    def acquire(self) -> None:
        taken: list[DirectoryLock] = []
        try:
            for lock in self._locks:
                lock.acquire()
                taken.append(lock)
        except BaseException:
            for lock in taken:
                lock.release()
            raise

    def release(self) -> None:
        for lock in self._locks:
            lock.release()
