"""`gregor cluster start` through its command line: a 3-broker, 1-controller cluster of real
processes that replicates, stops on SIGTERM and restarts with its data; a node failing at
startup; wrong flags, a port in use and a directory of another shape as one line."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from gregor.cli import cluster_layout

from tests.cli.conftest import in_process, one_error_line, tool_environment


class RunningTool:
    """`gregor cluster start ...` in a subprocess, its stdout read line by line on a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "gregor.cli.main", "cluster", "start", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=tool_environment())
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, prefix: str, timeout: float = 90) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                line = None
            if line is None:
                self.proc.kill()
                raise AssertionError(f"no line {prefix!r}: {''.join(self.output)}{self.proc.stderr.read()}")
            self.output.append(line)
            if line.startswith(prefix):
                return line.strip()

    @property
    def pids(self) -> list[int]:
        return [int(match) for line in self.output for match in re.findall(r" pid (\d+) ", line)]

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 60) -> int:
        self.proc.send_signal(signum)
        code = self.proc.wait(timeout)
        self.output += list(iter(lambda: _next_or_none(self.lines), None))
        return code


@pytest.fixture
def started(request):
    """Start `gregor cluster start ARGS`; whatever a failing test leaves running is killed (its nodes
    follow the tool on Linux)."""
    tools: list[RunningTool] = []

    def start(*args: str) -> RunningTool:
        tools.append(RunningTool(*args))
        return tools[-1]
    yield start
    for tool in tools:
        if tool.proc.poll() is None:
            tool.proc.kill()
            tool.proc.wait()


def _next_or_none(lines: queue.Queue) -> str | None:
    try:
        return lines.get(timeout=5)
    except queue.Empty:
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_a_three_broker_cluster_replicates_stops_on_sigterm_and_restarts_with_its_data(tmp_path, started):
    directory = str(tmp_path / "cluster")
    tool = started("--dir", directory, "--base-port", "0", "--brokers", "3", "--controllers", "1")
    bootstrap = tool.wait_for("Bootstrap servers:").split(": ", 1)[1]
    assert len(bootstrap.split(",")) == 3 and len(tool.pids) == 4
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result(30)
    partitions = admin.list_topics("orders", timeout=10).topics["orders"].partitions
    assert sorted(len(p.replicas) for p in partitions.values()) == [3, 3, 3]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(30):
        producer.produce("orders", f"order-{i}".encode(), key=str(i % 3).encode())
    assert producer.flush(30) == 0
    assert sorted(read_all(bootstrap, "orders", 30, group="billing")) == sorted(f"order-{i}" for i in range(30))

    assert tool.stop() == 0, tool.proc.stderr.read()
    assert "Stopped.\n" in tool.output
    assert [pid for pid in tool.pids if alive(pid)] == []

    again = started("--dir", directory, "--base-port", "0", "--brokers", "3", "--controllers", "1")
    bootstrap = again.wait_for("Bootstrap servers:").split(": ", 1)[1]
    assert any(line.startswith("Restarting") for line in again.output)
    assert len(read_all(bootstrap, "orders", 30)) == 30
    assert again.stop(signal.SIGINT) == 0
    assert [pid for pid in again.pids if alive(pid)] == []


def read_all(bootstrap: str, topic: str, count: int, group: str | None = None, timeout: float = 60) -> list[str]:
    """`count` values of `topic` read from the start, in a group (subscribe) or without one (assign)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group or "unused",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    if group:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    values: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
    finally:
        consumer.close()
    return values


@pytest.mark.slow
def test_a_node_that_exits_at_startup_is_shown_and_the_others_are_stopped(tmp_path, started):
    directory = tmp_path / "cluster"
    (directory / "broker-1").mkdir(parents=True)
    (directory / "broker-1" / "data").write_text("a file where the broker's log directory should be")
    (directory / cluster_layout.CLUSTER_FILE).write_text("cluster.id=R3JlZ29yQ2xpU3RhcnRUZXN0\nbrokers=1\ncontrollers=1\n")
    tool = started("--dir", str(directory), "--base-port", "0", "--brokers", "1", "--controllers", "1")
    code = tool.proc.wait(60)
    tool.output += list(iter(lambda: _next_or_none(tool.lines), None))
    stderr = tool.proc.stderr.read()
    assert code == 1, "".join(tool.output) + stderr
    assert stderr.startswith("gregor cluster: error: broker-1 exited with code 1 while the cluster was starting")
    assert "gregor server:" in stderr  # the broker's own last words, from its server.log
    assert [pid for pid in tool.pids if alive(pid)] == []


def test_wrong_flags_are_one_line_and_exit_2(capsys, tmp_path):
    directory = str(tmp_path / "never")
    for flags, named in ((["--brokers", "0"], "--brokers"), (["--controllers", "10"], "--controllers"),
                         (["--base-port", "65534"], "--base-port"), (["--timeout", "0"], "--timeout"),
                         (["--override", "node.id=7"], "node.id"),
                         (["--override", "num.partitions=2", "min.insync.replicas=many"], "min.insync.replicas")):
        result = in_process(capsys, "cluster", "start", "--dir", directory, *flags)
        assert result.returncode == 2, (flags, result)
        assert named in one_error_line(result)
    assert not os.path.exists(directory)


def test_a_port_in_use_is_one_line_and_nothing_is_written(capsys, tmp_path):
    directory = tmp_path / "cluster"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = in_process(capsys, "cluster", "start", "--dir", str(directory), "--base-port", str(port))
    assert result.returncode == 1
    assert f"port {port} (broker-1) is in use" in one_error_line(result)
    assert not directory.exists()


def test_a_directory_of_another_shape_or_content_is_refused(capsys, tmp_path):
    (tmp_path / cluster_layout.CLUSTER_FILE).write_text("cluster.id=abc\nbrokers=3\ncontrollers=1\n")
    result = in_process(capsys, "cluster", "start", "--dir", str(tmp_path), "--brokers", "5", "--base-port", "0")
    assert result.returncode == 1
    assert "holds a cluster of 3 brokers and 1 controller" in one_error_line(result)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    result = in_process(capsys, "cluster", "start", "--dir", str(other), "--base-port", "0")
    assert result.returncode == 1 and "not empty" in one_error_line(result)


def test_each_node_gets_its_wiring_and_the_development_defaults():
    nodes = cluster_layout.nodes("/tmp/c", 2, 3, list(range(9092, 9097)))
    assert [(n.name, n.port) for n in nodes] == [("broker-1", 9092), ("broker-2", 9093), ("controller-101", 9094),
                                                 ("controller-102", 9095), ("controller-103", 9096)]
    broker = cluster_layout.properties(nodes[1], nodes, "cid", {"num.partitions": "6"})
    controller = cluster_layout.properties(nodes[2], nodes, "cid", {"num.partitions": "6"})
    voters = "101@127.0.0.1:9094,102@127.0.0.1:9095,103@127.0.0.1:9096"
    assert broker["listeners"] == "PLAINTEXT://127.0.0.1:9093" and broker["controller.quorum.voters"] == voters
    assert controller["listeners"] == "CONTROLLER://127.0.0.1:9094" and controller["process.roles"] == "controller"
    for props in (broker, controller):
        assert props["default.replication.factor"] == props["offsets.topic.replication.factor"] == "2"
        assert props["num.partitions"] == "6" and "min.insync.replicas" not in props
