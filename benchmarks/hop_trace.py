"""Where a record's time goes between the brokers of an RF=3 row: a hop trace.

    .venv/bin/python benchmarks/hop_trace.py                    # 1,000 msg/s, 4 s traced
    .venv/bin/python benchmarks/hop_trace.py --rate 2000 --seconds 6 --cores 0,1

Runs `benchmarks/e2e_latency.py` (its RF=3 row only, no peer) with a tracer loaded into each
broker: a `sitecustomize` module, written to a temporary directory put first on the nodes'
PYTHONPATH, calls `install_in_broker` here. Between two signals from this script (SIGUSR1,
SIGUSR2, sent only to the brokers the benchmark started) each broker records, on
CLOCK_MONOTONIC (one clock for every process), the entry and exit of each client connection's
read callback with the API key of the first request read and the connection's client id, each
write of answers, and on followers the read callback of their link to the leader.

Each produce request the leader reads is followed to the next answer the leader writes to each
follower, that follower's read callback (decode, append, its next fetch written), the leader's
next read of that follower's fetch, and the leader's next answer to the consumer after the later
of the two. Printed: p50 / p90 / p99 of each hop in microseconds, and how often the leader's
writes to its two followers were more than 100 µs apart, which is a follower woken on the
leader's core preempting it. Tracing costs the brokers some CPU and the dump at the end stalls
them, so the row's own latencies are not the ones to quote; docs/latency.md quotes the hops.
"""

from __future__ import annotations

import argparse
import bisect
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
PRODUCE, FETCH = 0, 1
GAP_NS = 100_000
HOPS = ("leader: produce read to the answer written to a follower",
        "follower: written to, until its read callback starts",
        "follower: read callback (decode, append, next fetch written)",
        "follower: next fetch written, until the leader reads it",
        "leader: a follower's fetch read and handled",
        "leader: later follower fetch read to the consumer's answer written",
        "leader: produce read to the consumer's answer written")

Event = tuple[int, int, str, int, int, int]  # start ns, end ns (0: an instant), kind, connection, api key, bytes


def install_in_broker() -> None:
    """Called by the tracer's sitecustomize in every process the benchmark starts: only a broker
    with HOP_TRACE_DIR set is traced, from its import of the broker server on."""
    if not os.environ.get("HOP_TRACE_DIR") or "process.roles=broker" not in " ".join(sys.argv):
        return
    import importlib.abc

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any, target: Any = None) -> None:
            if name == "gregor.broker.server":
                sys.meta_path.remove(self)
                from gregor.broker import network, peer_channel
                recorder = Recorder(os.environ["HOP_TRACE_DIR"])
                patch(network.KafkaConnection, peer_channel.PeerLink, recorder)
                signal.signal(signal.SIGUSR1, lambda *_: recorder.start())
                signal.signal(signal.SIGUSR2, lambda *_: recorder.dump())
            return None

    sys.meta_path.insert(0, Finder())


class Recorder:
    """A broker's events while on, written to `directory` as trace-<pid>.json by `dump`."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.on = False
        self.events: list[Event] = []
        self.clients: dict[int, str] = {}

    def start(self) -> None:
        self.on = True

    def dump(self) -> None:
        self.on = False
        with open(os.path.join(self.directory, f"trace-{os.getpid()}.json"), "w") as out:
            json.dump({"events": self.events, "clients": self.clients}, out)


def patch(connection_class: Any, link_class: Any, recorder: Recorder) -> None:
    """Wrap the broker's client connections' read and write and its peer links' read."""
    clock = time.perf_counter_ns
    read, write, link_read = connection_class.buffer_updated, connection_class._write, link_class.data_received

    def buffer_updated(self: Any, nbytes: int) -> None:
        if not recorder.on:
            return read(self, nbytes)
        started, frame, start = clock(), self._buffer, self._start
        api_key = -1
        if self._end + nbytes - start >= 14:  # size, api key, version, correlation id, client id length
            api_key = int.from_bytes(frame[start + 4:start + 6], "big", signed=True)
            if self.connection_id not in recorder.clients:
                length = int.from_bytes(frame[start + 12:start + 14], "big", signed=True)
                recorder.clients[self.connection_id] = bytes(frame[start + 14:start + 14 + max(length, 0)]).decode(
                    errors="replace")
        try:
            return read(self, nbytes)
        finally:
            recorder.events.append((started, clock(), "read", self.connection_id, api_key, nbytes))

    def _write(self: Any, parts: list[Any]) -> None:
        if recorder.on and parts:
            recorder.events.append((clock(), 0, "write", self.connection_id, -1, sum(len(part) for part in parts)))
        return write(self, parts)

    def data_received(self: Any, data: bytes) -> None:
        if not recorder.on:
            return link_read(self, data)
        started = clock()
        try:
            return link_read(self, data)
        finally:
            recorder.events.append((started, clock(), "link read", self.address[1], -1, len(data)))

    connection_class.buffer_updated, connection_class._write = buffer_updated, _write
    link_class.data_received = data_received


def _after(times: list[int], moment: int) -> int | None:
    index = bisect.bisect_right(times, moment)
    return times[index] if index < len(times) else None


def hops(traces: dict[int, dict[str, Any]]) -> tuple[dict[str, list[int]], list[int]]:
    """Each hop's durations (ns) over the produce requests the leader read, and the gaps between
    the leader's consecutive writes to its two followers."""
    leader = max(traces, key=lambda pid: len(traces[pid]["events"]))
    events = sorted(tuple(event) for event in traces[leader]["events"])
    clients = {int(connection): name for connection, name in traces[leader]["clients"].items()}
    reads_of: dict[int, dict[int, int]] = {}
    for start, _, kind, connection, api_key, _ in events:
        if kind == "read":
            counts = reads_of.setdefault(connection, {})
            counts[api_key] = counts.get(api_key, 0) + 1
    fetchers = {connection for connection, name in clients.items() if name.startswith("replica-fetcher")}
    producer = max(reads_of, key=lambda c: reads_of[c].get(PRODUCE, 0))
    consumer = max((c for c in reads_of if c not in fetchers and c != producer),
                   key=lambda c: reads_of[c].get(FETCH, 0))
    writes = {connection: [e[0] for e in events if e[2] == "write" and e[3] == connection]
              for connection in (*fetchers, consumer)}
    fetch_reads = {connection: [(e[0], e[1]) for e in events if e[2] == "read" and e[3] == connection]
                   for connection in fetchers}
    link_reads = {pid: sorted((e[0], e[1]) for e in trace["events"] if e[2] == "link read")
                  for pid, trace in traces.items() if pid != leader}
    follower_of = {connection: min(link_reads, key=lambda pid: _median_gap(writes[connection], link_reads[pid]))
                   for connection in fetchers}
    durations: dict[str, list[int]] = {hop: [] for hop in HOPS}
    for start, end, kind, connection, api_key, _ in events:
        if kind != "read" or connection != producer or api_key != PRODUCE:
            continue
        chain = []
        for fetcher in fetchers:
            written = _after(writes[fetcher], start)
            reads = link_reads[follower_of[fetcher]]
            index = bisect.bisect_left(reads, (written or 0, 0))
            if written is None or index == len(reads):
                break
            link_start, link_end = reads[index]
            starts = [s for s, _ in fetch_reads[fetcher]]
            next_index = bisect.bisect_right(starts, link_end)
            if next_index == len(starts):
                break
            fetch_start, fetch_end = fetch_reads[fetcher][next_index]
            chain.append((written - start, link_start - written, link_end - link_start, fetch_start - link_end,
                          fetch_end - fetch_start, fetch_start))
        if len(chain) != len(fetchers) or not chain:
            continue
        last_fetch = max(step[5] for step in chain)
        answered = _after(writes[consumer], last_fetch)
        if answered is None:
            continue
        for step in chain:
            for hop, value in zip(HOPS, step[:5]):
                durations[hop].append(value)
        durations[HOPS[5]].append(answered - last_fetch)
        durations[HOPS[6]].append(answered - start)
    gaps = [b[0] - a[0] for a, b in zip(events, events[1:])
            if a[2] == b[2] == "write" and a[3] in fetchers and b[3] in fetchers and a[3] != b[3]]
    return durations, gaps


def _median_gap(writes: list[int], reads: list[tuple[int, int]]) -> float:
    starts = [start for start, _ in reads]
    gaps = sorted(after - moment for moment in writes[:500] if (after := _after(starts, moment)) is not None)
    return gaps[len(gaps) // 2] if gaps else float("inf")


def report(durations: dict[str, list[int]], gaps: list[int]) -> None:
    from e2e_latency import percentile  # not at the top: each traced broker imports this module

    def _percentile(values: list[int], fraction: float) -> float:  # microseconds
        return percentile(sorted(values), fraction) / 1000

    print("| hop | records | p50 µs | p90 µs | p99 µs |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for hop, values in durations.items():
        if values:
            print(f"| {hop} | {len(values):,} | {_percentile(values, 0.5):,.0f} | {_percentile(values, 0.9):,.0f} | "
                  f"{_percentile(values, 0.99):,.0f} |")
    if gaps:
        late = sum(gap > GAP_NS for gap in gaps)
        print(f"\nthe leader's writes to its two followers one after the other: {len(gaps):,}, median "
              f"{_percentile(gaps, 0.5):.0f} µs apart, {late:,} ({late / len(gaps):.1%}) more than "
              f"{GAP_NS // 1000} µs apart")


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _brokers(root: int) -> list[int]:
    brokers = []
    for pid in _descendants(root):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if b"process.roles=broker" in cmdline.read():
                    brokers.append(pid)
        except OSError:
            continue
    return brokers


def main() -> None:
    from e2e_latency import positive_int

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=positive_int, default=1000, help="records per second (default 1000)")
    parser.add_argument("--seconds", type=positive_int, default=4, help="how long to trace (default 4)")
    parser.add_argument("--cores", help="passed on to e2e_latency.py (CPU numbers, e.g. 0,1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gregor-hops-") as directory:
        with open(os.path.join(directory, "sitecustomize.py"), "w") as hook:
            hook.write(f"import sys\nsys.path.insert(0, {BENCHMARKS!r})\nimport hop_trace\nhop_trace.install_in_broker()\n")
        env = {**os.environ, "HOP_TRACE_DIR": directory,
               "PYTHONPATH": os.pathsep.join(filter(None, [directory, os.environ.get("PYTHONPATH")]))}
        command = [sys.executable, "-u", os.path.join(BENCHMARKS, "e2e_latency.py"), "--peer", "none",
                   "--configurations", "rf3", "--rates", str(args.rate), "--seconds", str(args.seconds + 4)]
        if args.cores:
            command += ["--cores", args.cores]
        # its progress goes to stderr, line by line: the warm-up row's tells when to start tracing
        benchmark = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert benchmark.stderr is not None
        brokers: list[int] = []
        for line in benchmark.stderr:
            print(line.rstrip(), file=sys.stderr)
            if line.startswith("warmup"):
                time.sleep(2)  # the RF=3 row is under way
                brokers = _brokers(benchmark.pid)
                for pid in brokers:
                    os.kill(pid, signal.SIGUSR1)
                time.sleep(args.seconds)
                for pid in brokers:
                    os.kill(pid, signal.SIGUSR2)
        if benchmark.wait() != 0 or not brokers:
            sys.exit(f"e2e_latency.py failed (exit {benchmark.returncode}) or started no broker")
        traces = {}
        for path in glob.glob(os.path.join(directory, "trace-*.json")):
            with open(path) as trace:
                traces[int(os.path.basename(path)[6:-5])] = json.load(trace)
    if len(traces) != 3:
        sys.exit(f"{len(traces)} broker traces, not 3")
    print()
    report(*hops(traces))


if __name__ == "__main__":
    main()
