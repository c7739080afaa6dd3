"""One broker for every CLI test module, and a helper that runs `gregor <tool>` as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import pytest

from tests.broker_process import BrokerProcess, free_port


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def tool_environment() -> dict[str, str]:
    """The environment for a tool process: bytecode cached outside the repository, so that each
    of the many short tool runs does not compile the client again (PYTHONDONTWRITEBYTECODE may be set)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "gregor-cli-tests-pycache")
    return env


def gregor(*args: str, stdin: str | None = None, timeout: float = 60) -> Result:
    """Run `python -m gregor.cli.main ARGS` and capture its output (text)."""
    done = subprocess.run([sys.executable, "-m", "gregor.cli.main", *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=tool_environment())
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="package")
def broker(tmp_path_factory):
    """A broker whose groups rebalance at once (no 3 s initial delay), shared by tests/cli."""
    process = BrokerProcess(str(tmp_path_factory.mktemp("gregor-cli") / "data"),
                            {"message.max.bytes": "200000", "group.initial.rebalance.delay.ms": "0",
                             "offsets.topic.num.partitions": "1"})
    process.start()
    yield process
    process.stop()


@pytest.fixture
def bootstrap(broker) -> list[str]:
    return ["--bootstrap-server", broker.bootstrap]


@pytest.fixture
def unreachable() -> list[str]:
    """A 127.0.0.1 port nobody listens on, and a short wait."""
    return ["--bootstrap-server", f"127.0.0.1:{free_port()}"]


def in_process(capsys, *args: str) -> Result:
    """`gregor ARGS` through the same `main` the console script calls, without a new interpreter:
    for the many wrong-argument cases, which never reach a broker."""
    from gregor.cli.main import main

    try:
        code = main(list(args))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def one_error_line(result: Result) -> str:
    """The single stderr line a failing tool prints (never a traceback)."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]
