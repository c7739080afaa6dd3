"""A log directory that fills up, for fault tests of real broker processes.

When the environment variable GREGOR_TEST_DISK_FULL names a control file, segment writes under the
directory named on the file's first line get the number of bytes on its second line (0 when
absent) and then fail with ENOSPC, for as long as the file exists: removing it returns the space,
rewriting it starts a new allowance. Without the variable nothing is looked up.

This is how an unprivileged test fills a broker's disk. The alternatives: a real small file
system needs root (mount, loop devices); RLIMIT_FSIZE limits each file, not the directory (every
new segment would have room again), applies to every file the process writes (its own log and
the metadata log too), fails with EFBIG (or SIGXFSZ) rather than ENOSPC, and cannot be lifted
from outside without privileges.
"""

from __future__ import annotations

import errno
import os
import threading

ENVIRONMENT_VARIABLE = "GREGOR_TEST_DISK_FULL"


class DiskAllowance:
    """The bytes a control file allows under its directory; re-read whenever the file changes."""

    def __init__(self, control: str) -> None:
        self.control = control
        self._version: tuple[int, int, int] | None = None
        self._directory = ""
        self._left = 0
        self._lock = threading.Lock()

    def room(self, path: str, wanted: int) -> int:
        """How many of `wanted` bytes may be written to `path` now; OSError(ENOSPC) when none."""
        try:
            stat = os.stat(self.control)
        except FileNotFoundError:
            return wanted
        with self._lock:
            version = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            if version != self._version:
                with open(self.control) as control:
                    lines = control.read().splitlines()
                self._directory = os.path.abspath(lines[0].strip()) if lines else ""
                self._left = int(lines[1]) if len(lines) > 1 and lines[1].strip() else 0
                self._version = version
            if not self._directory or not os.path.abspath(path).startswith(self._directory + os.sep):
                return wanted
            if self._left <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            allowed = min(wanted, self._left)
            self._left -= allowed
            return allowed


_allowance = DiskAllowance(os.environ[ENVIRONMENT_VARIABLE]) if os.environ.get(ENVIRONMENT_VARIABLE) else None


def room(path: str, wanted: int) -> int:
    """`wanted`, unless a test has filled the disk under `path` (see the module's docstring)."""
    return wanted if _allowance is None else _allowance.room(path, wanted)
