"""End-to-end latency at fixed rates: one producer (linger.ms=0, acks=all), a consumer in another process.

    .venv/bin/python benchmarks/e2e_latency.py                        # rates 1000 5000 10000, RF=3, RF=1, tansu
    .venv/bin/python benchmarks/e2e_latency.py --rates 5000 --seconds 20 --peer none
    .venv/bin/python benchmarks/e2e_latency.py --rates 1000 --rounds 3 --peer none   # medians, RF=3/RF=1 ratios

`linger.ms=0` with `acks=all` is what kafka-python, aiokafka and Java clients before 4.0 send by
default: every record goes out as soon as the connection may carry it, so the broker sees many
small acks=all produce requests. The script starts, on free loopback ports in a temporary
directory, one controller-only node and three broker-only nodes (as benchmarks/replicated_produce.py
does) and runs each rate against, each time on a new one-partition topic:

    rf3   replication factor 3, min.insync.replicas=2 (the cluster)
    rf1   replication factor 1 (the same cluster)
    tansu replication factor 1 (one tansu node, in-memory storage), with `--peer tansu`

Each record's value starts with the wall-clock time of its `produce()` call; a consumer process
(this script with `--consume`, assigned the partition from offset 0, no group) takes its receive
time when `poll()` returns the record. The end-to-end latency is the difference: producer queue,
produce request, replication to the ISR (acks=all holds the high watermark until then, and the
consumer reads only below it), fetch and delivery. Producer and consumer are separate processes on
one machine, so their clocks are the same.

Printed per row: records sent at the rate, records the consumer received within `--drain-seconds`
after the sending ended (all of them, unless the broker fell behind), the producer's delivery
errors (records still unacknowledged at the end count as errors), and p50 / p99 / p99.9 of the end-to-end
latency in milliseconds, and the CPU time the broker's processes used during the row (the
controller and the three brokers for Gregor). The producer is librdkafka (confluent-kafka) with its
defaults besides `linger.ms=0` and `acks=all` (not idempotent, as kafka-python's and aiokafka's
defaults). `--event-loops asyncio uvloop` runs Gregor once per event loop, each on a new cluster.
`--rounds N` runs Gregor's rows N times in turn, so that RF=3 and RF=1 alternate and a slow moment
of a shared machine weighs on both, and prints each row's median and the RF=3 / RF=1 p99 ratio of
each round: one 10 s row's p99 rests on its 100 slowest records, and the ratio of two such rows
swung from 2.5 to 6.3 over invocations of the same code. The last line says how fast the machine
was (`machine_speed.py`: a reference Python workload timed before and after, and the CPU time the
hypervisor stole meanwhile): figures of a shared virtual machine are comparable where it is.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gregor.cli.common import key_value  # noqa: E402
from machine_speed import StealMeter, describe, reference_us  # noqa: E402
from replicated_produce import Configuration, GregorCluster, Processes, Tansu, create_topic  # noqa: E402
from throughput import tansu_binary  # noqa: E402

_STAMP = struct.Struct(">d")
RF3 = Configuration("rf3", 3, "all", 2)
RF1 = Configuration("rf1", 1, "all")


@dataclass
class Row:
    broker: str
    configuration: str
    rate: int
    sent: int
    received: int
    errors: int
    p50: float
    p99: float
    p999: float
    cpu_s: float


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time the processes have used so far (Linux /proc)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def percentile(ordered: list[float], fraction: float) -> float:
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def consume(bootstrap: str, topic: str, expected: int, timeout_s: float, ready_path: str, out_path: str) -> None:
    """The consumer process: read `expected` records from offset 0, write their latencies' summary."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"latency-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition(topic, 0, 0)])
    consumer.poll(0.5)
    with open(ready_path, "w"):
        pass
    latencies: list[float] = []
    deadline = time.monotonic() + timeout_s
    while len(latencies) < expected and time.monotonic() < deadline:
        # poll() returns as soon as a record is there; consume(n, t) would wait for n records or t
        message = consumer.poll(0.2)
        received = time.time()
        if message is not None and message.error() is None:
            latencies.append((received - _STAMP.unpack_from(message.value())[0]) * 1000)
    consumer.close()
    latencies.sort()
    with open(out_path, "w") as out:
        json.dump({"received": len(latencies), "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99),
                   "p999": percentile(latencies, 0.999)}, out)


def produce_at(bootstrap: str, topic: str, rate: int, seconds: float, size: int, drain_s: float) -> tuple[int, int]:
    """Send `rate` records/s for `seconds`; (records sent, delivery errors)."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    errors = 0
    acked: list[float] = []

    def delivered(error, message) -> None:
        nonlocal errors
        if error is not None:
            errors += 1
        else:
            acked.append(message.latency() * 1000)

    padding = b"x" * (size - _STAMP.size)
    total = int(rate * seconds)
    started = time.monotonic()
    for index in range(total):
        due = started + index / rate
        while (wait := due - time.monotonic()) > 0:
            # Sleep, not poll(wait): librdkafka takes whole milliseconds, so a wait under 1 ms
            # becomes poll(0) and the loop would spin, taking a core from the brokers measured.
            producer.poll(0)
            time.sleep(min(wait, 0.001))
        producer.produce(topic, _STAMP.pack(time.time()) + padding, partition=0, on_delivery=delivered)
        producer.poll(0)
    remaining = producer.flush(drain_s)
    acked.sort()
    print(f"  produce acknowledged: p50 {percentile(acked, 0.5):.1f} ms, p99 {percentile(acked, 0.99):.1f} ms",
          file=sys.stderr)
    return total, errors + remaining


def run_rate(name: str, bootstrap: str, configuration: Configuration, rate: int, args: argparse.Namespace,
             processes: Processes, root: str, pids: list[int]) -> Row:
    """One row; `pids`: the broker's processes, whose CPU time during the row is reported."""
    from confluent_kafka.admin import AdminClient
    topic = f"latency-{configuration.name}-{rate}-{uuid.uuid4().hex[:6]}"
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), topic, 1, configuration)
    ready, out = os.path.join(root, f"{topic}.ready"), os.path.join(root, f"{topic}.json")
    expected = int(rate * args.seconds)
    consumer = processes.start(f"consumer {topic}", [
        sys.executable, os.path.abspath(__file__), "--consume", bootstrap, topic, str(expected),
        str(args.seconds + args.drain_seconds), ready, out], os.path.join(root, f"{topic}.log"))
    deadline = time.monotonic() + 30
    while not os.path.exists(ready):
        if consumer.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the consumer of {topic} did not start; see {root}")
        time.sleep(0.05)
    cpu_before = cpu_seconds(pids)
    sent, errors = produce_at(bootstrap, topic, rate, args.seconds, args.size, args.drain_seconds)
    consumer.wait(args.seconds + args.drain_seconds + 30)
    cpu_used = cpu_seconds(pids) - cpu_before
    with open(out) as handle:
        figures = json.load(handle)
    row = Row(name, configuration.name, rate, sent, figures["received"], errors, figures["p50"], figures["p99"],
              figures["p999"], cpu_used)
    print(f"{row.broker:6} {row.configuration:4} {rate:>6}/s: received {row.received}/{row.sent}, errors {errors}, "
          f"p50 {row.p50:.1f} ms, p99 {row.p99:.1f} ms, p99.9 {row.p999:.1f} ms, broker CPU {cpu_used:.1f} s",
          file=sys.stderr)
    return row


def warm_up(bootstrap: str, args: argparse.Namespace, processes: Processes, root: str, pids: list[int]) -> None:
    """One short unreported run first: the consumer's coordinator lookup makes the broker create
    __consumer_offsets (50 partitions), which must not fall into the first measured row."""
    warm = argparse.Namespace(**{**vars(args), "seconds": 2.0})
    run_rate("warmup", bootstrap, RF1, min(args.rates), warm, processes, root, pids)


def _described(configuration: str) -> str:
    return "RF=3, min.insync=2" if configuration == "rf3" else "RF=1"


def report(rows: list[Row], args: argparse.Namespace) -> None:
    print(f"\nEnd-to-end latency, one producer (librdkafka, linger.ms=0, acks=all) at a fixed rate for "
          f"{args.seconds:g} s, records of {args.size} B, one partition, consumer in another process:\n")
    print("| broker | topic | rate (msg/s) | received | p50 (ms) | p99 (ms) | p99.9 (ms) | broker CPU (s) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        described = _described(row.configuration)
        received = f"{row.received:,}/{row.sent:,}" + (f" ({row.errors} errors)" if row.errors else "")
        print(f"| {row.broker} | {described} | {row.rate:,} | {received} | {row.p50:.1f} | {row.p99:.1f} | "
              f"{row.p999:.1f} | {row.cpu_s:.1f} |")


def summarize(rows: list[Row]) -> None:
    """With several rounds: each row's median over the rounds, and the ratio of RF=3 to RF=1 p99
    of each round (rows of one round ran one after the other, so a slow moment of a shared machine
    weighs on both) with its median."""
    groups: dict[tuple[str, str, int], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.broker, row.configuration, row.rate), []).append(row)
    if all(len(group) < 2 for group in groups.values()):
        return
    print("\nMedians over the rounds:\n")
    print("| broker | topic | rate (msg/s) | rounds | p50 (ms) | p99 (ms) | p99.9 (ms) | broker CPU (s) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (broker, configuration, rate), group in groups.items():
        described = _described(configuration)
        medians = [statistics.median(getattr(row, field) for row in group) for field in ("p50", "p99", "p999", "cpu_s")]
        print(f"| {broker} | {described} | {rate:,} | {len(group)} | " + " | ".join(f"{m:.1f}" for m in medians) + " |")
    for (broker, configuration, rate), group in groups.items():
        single = groups.get((broker, "rf1", rate))
        if configuration != "rf3" or not single:
            continue
        ratios = [rf3.p99 / rf1.p99 for rf3, rf1 in zip(group, single) if rf1.p99 > 0]
        if ratios:
            print(f"\n{broker}, {rate:,} msg/s: RF=3 / RF=1 p99 per round " + ", ".join(f"{r:.1f}" for r in ratios)
                  + f" (median {statistics.median(ratios):.1f})")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--seconds", type=float, default=10.0, help="sending time per rate (default 10)")
    parser.add_argument("--size", type=int, default=100, help="record value size in bytes (default 100)")
    parser.add_argument("--drain-seconds", type=float, default=60.0,
                        help="how long after sending the producer and consumer may take to finish (default 60); a "
                             "broker that falls behind shows as records not received")
    parser.add_argument("--rounds", type=positive_int, default=1,
                        help="run Gregor's rows this many times, in turn (RF=3 and RF=1 alternate), and print their "
                             "medians and the RF=3 / RF=1 p99 ratio of each round (default 1)")
    parser.add_argument("--peer", choices=["tansu", "none"], default="tansu" if tansu_binary() else "none")
    parser.add_argument("--configurations", nargs="+", choices=["rf3", "rf1"], default=["rf3", "rf1"])
    parser.add_argument("--event-loops", nargs="+", choices=["default", "uvloop", "asyncio"], default=["default"],
                        help="run Gregor once per event loop (GREGOR_EVENT_LOOP), each on a fresh cluster "
                             "(default: the nodes' default, uvloop where installed)")
    parser.add_argument("--broker-config", type=key_value, nargs="+", default=[], metavar="KEY=VALUE",
                        help="set on every Gregor broker (--override), e.g. socket.receive.buffer.bytes=102400")
    parser.add_argument("--cores", type=_cores, default=None, metavar="0,1",
                        help="run every process of the benchmark (the nodes or tansu, producer, consumer) on these "
                             "CPUs only, as a smaller machine would: child processes inherit the affinity (Linux)")
    return parser.parse_args()


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def _cores(text: str) -> set[int]:
    try:
        cores = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of CPU numbers") from None
    if not cores or min(cores) < 0:
        raise argparse.ArgumentTypeError(f"'{text}' names no CPU, or a negative one")
    return cores


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--consume":
        bootstrap, topic, expected, timeout_s, ready, out = sys.argv[2:8]
        consume(bootstrap, topic, int(expected), float(timeout_s), ready, out)
        return
    args = parse_args()
    if args.cores is not None:
        try:
            os.sched_setaffinity(0, args.cores)
        except OSError as error:
            sys.exit(f"e2e_latency.py: --cores {','.join(map(str, sorted(args.cores)))}: {error.strerror} "
                     f"(this machine has CPUs {','.join(map(str, sorted(os.sched_getaffinity(0))))})")
    steal = StealMeter()
    speed_before = reference_us()
    processes = Processes()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="gregor-latency-") as root:
        try:
            chosen = [c for c in (RF3, RF1) if c.name in args.configurations]
            for loop in args.event_loops:
                name = "gregor" if loop == "default" else f"gregor ({loop})"
                cluster = GregorCluster(processes, os.path.join(root, f"gregor-{loop}"),
                                        broker_config=dict(args.broker_config),
                                        event_loop=None if loop == "default" else loop)
                cluster.start()
                warm_up(cluster.bootstrap, args, processes, root, cluster.pids)
                for _ in range(args.rounds):
                    for configuration in chosen:
                        for rate in args.rates:
                            rows.append(run_rate(name, cluster.bootstrap, configuration, rate, args, processes, root,
                                                 cluster.pids))
                processes.stop_all()
            if args.peer == "tansu":
                tansu = Tansu(processes, root, tansu_binary())
                tansu.start()
                warm_up(tansu.bootstrap, args, processes, root, tansu.pids)
                for rate in args.rates:
                    rows.append(run_rate("tansu", tansu.bootstrap, RF1, rate, args, processes, root, tansu.pids))
        finally:
            processes.stop_all()
    report(rows, args)
    summarize(rows)
    print(describe(speed_before, reference_us(), steal.share()))


if __name__ == "__main__":
    main()
