"""benchmarks/e2e_latency.py's `--broker-config`: KEY=VALUE items for every broker, and one line
refusing anything else before a cluster starts."""

from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "benchmarks", "e2e_latency.py")


def test_a_broker_config_without_an_equals_sign_is_refused_in_one_line():
    done = subprocess.run([sys.executable, SCRIPT, "--broker-config", "socket.receive.buffer.bytes"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "e2e_latency.py: error: argument --broker-config: expected key=value, got 'socket.receive.buffer.bytes'")


def test_broker_configs_are_parsed_into_pairs(monkeypatch):
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    try:
        import e2e_latency
    finally:
        sys.path.remove(os.path.join(REPO, "benchmarks"))
    monkeypatch.setattr(sys, "argv", ["e2e_latency.py", "--broker-config", "socket.receive.buffer.bytes=102400",
                                      "log.message.timestamp.type=LogAppendTime"])
    assert dict(e2e_latency.parse_args().broker_config) == {
        "socket.receive.buffer.bytes": "102400", "log.message.timestamp.type": "LogAppendTime"}
