"""One SIGINT ends `gregor console-consumer`, wherever in its poll loop it lands.

Each run is a fresh process (forked from `fork_server`, so that 200 of them cost seconds, not
minutes) reading a topic that a producer keeps writing to, so that the signal falls at random
points of the loop: waiting for data, draining the fetch buffer, writing, flushing. Each must
exit within 3 s with exit code 0 and its "Processed a total of" line.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer as OracleProducer

from tests.cli.conftest import gregor, tool_environment

RUNS = 200
CONCURRENT = 6
EXIT_WITHIN_S = 3.0
READY_WITHIN_S = 30.0
FORK_SERVER = os.path.join(os.path.dirname(__file__), "fork_server.py")


@dataclass
class Run:
    pid: int
    out: str
    err: str
    started: float
    signal_at: float | None = None
    signalled: float | None = None
    exited: float | None = None
    returncode: int | None = None


@pytest.fixture(scope="module")
def flowing_topic(broker):
    """A topic that a background producer writes a record to every few ms."""
    name = f"sigint-{uuid.uuid4().hex[:8]}"
    assert gregor("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", name,
                  "--partitions", "2").returncode == 0
    stop = threading.Event()

    def produce() -> None:
        producer = OracleProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        number = 0
        while not stop.is_set():
            producer.produce(name, value=b"record-%d" % number)
            producer.poll(0)
            number += 1
            time.sleep(0.004)
        producer.flush(5)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    yield name
    stop.set()
    thread.join(10)


class ForkServer:
    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, FORK_SERVER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=tool_environment())
        self.started: queue.Queue = queue.Queue()
        self.exits: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            report = json.loads(line)
            (self.started if report[0] == "started" else self.exits).put(report[1:])

    def spawn(self, out: str, err: str, args: list[str]) -> int:
        self.process.stdin.write((json.dumps([out, err, args]) + "\n").encode())
        self.process.stdin.flush()
        return self.started.get(timeout=30)[0]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(30)


@pytest.mark.slow
def test_one_sigint_ends_the_consumer_wherever_it_lands(broker, flowing_topic, tmp_path):
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    args = ["console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", flowing_topic]
    server = ForkServer()
    runs: dict[int, Run] = {}
    failures: list[str] = []
    began = time.monotonic()
    try:
        while len(runs) < RUNS or any(run.exited is None for run in runs.values()):
            live = [run for run in runs.values() if run.exited is None]
            if len(live) < CONCURRENT and len(runs) < RUNS:
                out, err = str(tmp_path / f"{len(runs)}.out"), str(tmp_path / f"{len(runs)}.err")
                pid = server.spawn(out, err, args)
                runs[pid] = Run(pid, out, err, time.monotonic())
            now = time.monotonic()
            for run in live:
                _step(run, now, rng, failures)
            _collect_exits(server, runs)
            time.sleep(0.002)
    finally:
        for run in runs.values():
            if run.exited is None:
                os.kill(run.pid, signal.SIGKILL)
        server.close()
    elapsed = time.monotonic() - began
    for run in runs.values():
        stderr = open(run.err).read()[-2000:]
        if run.signalled is None:
            failures.append(f"pid {run.pid} exited {run.returncode} before it was signalled: {stderr}")
        elif run.returncode != 0 or "Processed a total of" not in stderr:
            failures.append(f"pid {run.pid} exited {run.returncode} after SIGINT: {stderr}")
    latencies = sorted(run.exited - run.signalled for run in runs.values() if run.signalled and run.exited)
    print(f"seed {seed}: {len(runs)} runs in {elapsed:.1f}s; exit after SIGINT: "
          f"median {latencies[len(latencies) // 2]:.3f}s, max {latencies[-1]:.3f}s")
    assert not failures, f"seed {seed}:\n" + "\n".join(dict.fromkeys(failures))


def _step(run: Run, now: float, rng: random.Random, failures: list[str]) -> None:
    """Signal a run once it has printed a record (its poll loop is live), after a random delay;
    kill one that does not exit in time."""
    if run.signalled is None:
        if run.signal_at is None:
            if os.path.getsize(run.out) > 0:
                run.signal_at = now + rng.uniform(0.0, 0.3)
            elif now - run.started > READY_WITHIN_S:
                failures.append(f"pid {run.pid} printed no record within {READY_WITHIN_S}s: {open(run.err).read()}")
                os.kill(run.pid, signal.SIGKILL)
                run.signalled, run.returncode = now, -signal.SIGKILL
        elif now >= run.signal_at:
            os.kill(run.pid, signal.SIGINT)
            run.signalled = time.monotonic()
    elif now - run.signalled > EXIT_WITHIN_S and run.returncode is None:
        failures.append(f"pid {run.pid} still running {EXIT_WITHIN_S}s after SIGINT; stderr: "
                        f"{open(run.err).read()[-2000:]}")
        os.kill(run.pid, signal.SIGKILL)
        run.returncode = -signal.SIGKILL


def _collect_exits(server: ForkServer, runs: dict[int, Run]) -> None:
    while not server.exits.empty():
        pid, returncode, exited = server.exits.get()
        run = runs[pid]
        run.exited = exited
        if run.returncode is None:
            run.returncode = returncode
