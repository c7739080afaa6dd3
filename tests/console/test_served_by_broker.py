"""The web console served by `gregor server` itself (`console.port`): a real broker process
serves the cluster page for its own cluster; a console it cannot serve is refused in one line."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from gregor.broker.config import BrokerConfig, ConfigError
from tests.broker_process import BrokerProcess
from tests.cli.conftest import Result, one_error_line, tool_environment


def server(tmp_path, *overrides: str, prelude: str = "") -> Result:
    """`gregor server` in a new interpreter that runs `prelude` first; it must exit by itself."""
    args = ["server", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", f"log.dirs={tmp_path / 'data'}", *[f"--override={item}" for item in overrides]]
    code = f"import sys\n{prelude}\nfrom gregor.cli.main import main\nsys.exit(main({args!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                          env=tool_environment())
    return Result(done.returncode, done.stdout, done.stderr)


def test_the_broker_serves_the_console_for_its_cluster(tmp_path):
    pytest.importorskip("uvicorn")
    process = BrokerProcess(str(tmp_path / "data"), {"console.port": "0", "console.read.only": "true"})
    process.start()
    try:
        logged = _console_line(process)
        assert logged is not None, process.output()
        assert logged[2] != "0" and logged[3] == process.bootstrap
        with urllib.request.urlopen(logged[1], timeout=20) as answer:
            status, page = answer.status, answer.read().decode()
    finally:
        process.stop()
    assert status == 200
    assert f"<td>{process.bootstrap}</td>" in page and 'data-broker="1"' in page  # the broker, by address and id
    assert process.proc.returncode == 0 and "Traceback" not in process.output()


def _console_line(process: BrokerProcess, timeout: float = 30) -> re.Match[str] | None:
    """The broker's line naming its console, once logged: the console starts after the broker
    answers (its clients are made on a worker thread), so the line can come after `start` returns."""
    deadline = time.monotonic() + timeout
    while True:
        logged = re.search(r"INFO gregor.console Web console at (http://127\.0\.0\.1:(\d+)/) for the cluster at "
                           r"(\S+) \(read-only\)", process.output())
        if logged is not None or time.monotonic() > deadline or process.proc.poll() is not None:
            return logged
        time.sleep(0.05)


def test_a_console_without_its_extra_is_refused_in_one_line(tmp_path):
    result = server(tmp_path, "console.port=0", prelude="sys.modules['uvicorn'] = None  # as if not installed")
    assert result.returncode == 2
    assert one_error_line(result) == ("gregor server: console.port: the web console needs the console extra: "
                                      "pip install 'gregor-streaming[console]' (missing: uvicorn)")
    assert not (tmp_path / "data").exists()  # refused before the broker touched its data


def test_a_busy_console_port_is_one_line(tmp_path):
    pytest.importorskip("uvicorn")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = server(tmp_path, f"console.port={port}")
    assert result.returncode == 1
    assert one_error_line(result) == (f"gregor server: console.port: cannot listen on 127.0.0.1:{port}: "
                                      f"Address already in use")


@pytest.mark.parametrize("properties, host", [
    ({}, "localhost"),
    ({"listeners": "PLAINTEXT://127.0.0.1:19092"}, "127.0.0.1"),
    ({"listeners": "PLAINTEXT://:19092"}, ""),
    ({"listeners": "PLAINTEXT://127.0.0.1:19092", "console.host": "0.0.0.0"}, "0.0.0.0"),
])
def test_the_console_listens_where_the_broker_does_unless_told(properties, host):
    config = BrokerConfig(properties)
    assert config.console_host == host
    assert config.get("console.port") == -1 and config.get("console.read.only") is False  # off by default


@pytest.mark.parametrize("properties, message", [
    ({"console.port": "70000"}, "console.port: must be -1 (off) or 0..65535, got 70000"),
    ({"console.port": "8080", "process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:19093",
      "controller.quorum.voters": "1@127.0.0.1:19093"}, "console.port: a controller-only node has no client"),
])
def test_a_console_the_broker_cannot_serve_is_a_config_error(properties, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        BrokerConfig(properties)


@pytest.mark.parametrize("host, bootstrap", [
    ("127.0.0.1", "127.0.0.1:9092"), ("", "127.0.0.1:9092"), ("0.0.0.0", "127.0.0.1:9092"),
    ("::", "[::1]:9092"), ("broker1.example", "broker1.example:9092"),
])
def test_the_console_reaches_a_wildcard_listener_on_loopback(host, bootstrap):
    pytest.importorskip("uvicorn")
    from gregor.cli.embedded_console import bootstrap_of

    assert bootstrap_of(host, 9092) == bootstrap
