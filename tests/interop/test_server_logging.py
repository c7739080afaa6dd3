"""`gregor server --log-file F --log-format json`: one JSON object per line, levelled and named,
and a file moved away by logrotate is reopened, so no line is lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.broker_process import api_versions_ok, free_port

pytestmark = pytest.mark.interop


def test_json_lines_survive_a_rotation(tmp_path):
    port = free_port()
    log_file = tmp_path / "server.log"
    args = [sys.executable, "-m", "gregor.cli.main", "server", "--log-file", str(log_file), "--log-format", "json",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={tmp_path / 'data'}"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not api_versions_ok(port):
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read().decode()
            time.sleep(0.1)
        os.rename(log_file, tmp_path / "server.log.1")
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0 and stderr == b""
    before = [json.loads(line) for line in (tmp_path / "server.log.1").read_text().splitlines()]
    after = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert any("started" in entry["message"] for entry in before)
    assert any("stopped cleanly" in entry["message"] for entry in after)
    for entry in before + after:
        assert {"time", "level", "logger", "message"} <= entry.keys() and entry["logger"].startswith("gregor")


def test_an_unwritable_log_file_is_one_line_and_exit_2(tmp_path):
    result = subprocess.run([sys.executable, "-m", "gregor.cli.main", "server", "--log-file",
                             str(tmp_path / "missing" / "dir" / "server.log")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.startswith("gregor server: cannot open the log file") and len(result.stderr.splitlines()) == 1
