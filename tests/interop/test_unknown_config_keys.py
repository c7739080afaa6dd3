"""A misspelt key in `--override` or a `--config` file is not silently ignored: a started broker
logs one WARNING per unknown key (with the key it was likely meant to be), a valid configuration
logs none, and `gregor server --check-config` reports both without starting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.interop

REPO = Path(__file__).resolve().parents[2]


def warnings_of(process: BrokerProcess) -> list[str]:
    return [line for line in process.output().splitlines() if " WARNING " in line]


def test_a_broker_started_with_unknown_keys_warns_once_per_key(tmp_path):
    process = BrokerProcess(str(tmp_path / "data"), {"listners": "PLAINTEXT://127.0.0.1:1",
                                                    "zookeeper.connect": "localhost:2181",
                                                    "num.partitions": "2"})
    process.start()
    try:
        warnings = warnings_of(process)
    finally:
        process.stop()
    assert [line.split(" WARNING ", 1)[1] for line in warnings] == [
        "gregor.config The configuration 'listners' was supplied but isn't a known config; did you mean 'listeners'?",
        "gregor.config The configuration 'zookeeper.connect' was supplied but isn't a known config"]


def test_a_valid_configuration_logs_no_warning(tmp_path):
    process = BrokerProcess(str(tmp_path / "data"), {"num.partitions": "2", "log.preallocate": "false",
                                                    "listener.name.plaintext.socket.receive.buffer.bytes": "1"})
    process.start()
    try:
        assert warnings_of(process) == []
    finally:
        process.stop()


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gregor.cli.main", "server", "--check-config", *args],
                          capture_output=True, text=True, timeout=60, cwd=REPO)


def test_check_config_reports_an_unknown_key_in_a_file_and_exits_1(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://127.0.0.1:19092\nlog.retention.hour=12\n"
                      f"log.dirs={tmp_path / 'data'}\n")
    result = check("--config", str(config))
    assert result.returncode == 1 and result.stderr == ""
    assert result.stdout.splitlines() == [
        "Unknown keys:",
        "  The configuration 'log.retention.hour' was supplied but isn't a known config; "
        "did you mean 'log.retention.hours'?",
        "Values that differ from the defaults:",
        "  group.initial.rebalance.delay.ms=0  (the embedded single node's default; Kafka's is 3000)",
        "  listeners=PLAINTEXT://127.0.0.1:19092",
        f"  log.dirs={tmp_path / 'data'}"]
    assert not (tmp_path / "data").exists()


def test_check_config_of_the_shipped_file_is_clean():
    result = check("--config", "config/server.properties")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.splitlines()[0] == "No unknown keys."


def test_check_config_of_an_invalid_value_is_one_line_and_exit_1():
    result = check("--override", "num.partitions=many")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == ["gregor server: num.partitions: 'many' is not a valid int"]


def test_check_config_shows_an_empty_value_that_replaces_a_derived_default():
    result = check("--override", "metrics.host=")
    assert result.returncode == 0
    assert "  metrics.host=" in result.stdout.splitlines()
