"""A fork server for tests that need many fresh `gregor` processes: it imports the command line
once, then forks a child per request, so each child is a new process (its own main thread,
signal handlers and interpreter exit) that starts in milliseconds instead of half a second.

Protocol (one line each way, JSON): the test writes `[stdout_path, stderr_path, [args...]]`;
the server answers `["started", pid]`, and later `["exited", pid, returncode, monotonic_time]`
when it reaps the child (`time.monotonic` is CLOCK_MONOTONIC, comparable across processes).
The server is single-threaded, so forking is safe; the child runs `gregor.cli.main.main(args)`
and exits through the normal interpreter shutdown.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time

from gregor.cli.main import build_parser, main


def _report(*fields: object) -> None:
    os.write(1, (json.dumps(fields) + "\n").encode())


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _report("exited", pid, os.waitstatus_to_exitcode(status), time.monotonic())


def serve() -> list[str] | None:
    """Fork children until stdin closes; in a child, return its arguments."""
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], 0.005)
        _reap()
        if not ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            while True:
                try:
                    os.wait()
                except ChildProcessError:
                    return None
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            out_path, err_path, args = json.loads(line)
            files = [os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for path in (out_path, err_path)]
            pid = os.fork()
            if pid == 0:
                for fd, target in zip((1, 2), files):
                    os.dup2(target, fd)
                    os.close(target)
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                return args
            for target in files:
                os.close(target)
            _report("started", pid)


if __name__ == "__main__":
    build_parser()  # imports every tool's module once, before the forks (a run imports only its own)
    arguments = serve()
    if arguments is not None:
        sys.exit(main(arguments))
