"""Start and stop real `gregor server` processes for interop and chaos tests."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import IO, Callable

from tools.ports import free_port



def api_versions_ok(port: int) -> bool:
    """One ApiVersions v0 round trip over a raw socket."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            body = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
            sock.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", sock.recv(4))[0]
            return size > 0
    except OSError:
        return False


class BrokerProcess:
    def __init__(self, data_dir: str, overrides: dict[str, str] | None = None,
                 ready: Callable[[int], bool] = api_versions_ok) -> None:
        """`ready(port)`: whether the process serves on `port` (a TLS listener needs its own check)."""
        self.data_dir = data_dir
        self.ready = ready
        self.port = free_port()
        self.overrides = dict(overrides or {})
        self.proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self.log_path = os.path.join(os.path.dirname(data_dir), f"broker-{self.port}.log")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> None:
        args = [sys.executable, "-m", "gregor.cli.main", "server",
                "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
                "--override", f"log.dirs={self.data_dir}"]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gregor server exited with {self.proc.returncode}:\n{self.output()}")
            if self.ready(self.port):
                return
            time.sleep(0.1)
        self.kill9()  # not left running when the test that started it fails here
        raise RuntimeError(f"gregor server did not answer within {timeout}s:\n{self.output()}")

    def output(self) -> str:
        with open(self.log_path, "rb") as handle:
            return handle.read().decode(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_log()

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets but answers nothing (a long GC pause, a frozen VM)."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def restart(self) -> None:
        self.start()
