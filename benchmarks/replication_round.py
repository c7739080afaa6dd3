"""The CPU cost of one replication round's protocol logic, in process, without sockets or an event loop.

    .venv/bin/python benchmarks/replication_round.py
    .venv/bin/python benchmarks/replication_round.py --rounds 20000 --idle-partitions 0 16
    .venv/bin/python benchmarks/replication_round.py --idle-partitions 16 --evict-mb 16   # cold caches

A leader and a follower of one partition (replicas 1 and 2, both in the ISR), each with a real
log in a temporary directory, exchange Fetch v13 requests and responses as bytes, through the
code a broker runs: the follower's `FetcherLinks` (fetch session, next request), `Partition`
and `Log.append_as_follower`; the leader's request header parsing, `FetchSessions.open`,
`serve_follower_fetch`, the purgatory (`DelayedFetches`: parked under the session's partitions,
woken by the append) and response encoding. Each round is the steady state of
`benchmarks/e2e_latency.py`'s RF=3 rows: the follower's fetch arrives with nothing new and
parks (its offset moves the high watermark), one record of 100 B is appended as the leader, the
parked fetch is served again and answered, and the follower appends the record and makes its
next fetch. `--idle-partitions N` adds N partitions led by the same leader that never change, as
the `__consumer_offsets` partitions in a follower's fetch session (about 16 per leader on a
3-broker cluster).

Printed per round, in microseconds of this process (warm caches unless `--evict-mb`, one core;
each stage's median over chunks of 500 rounds, so that a moment of a busy machine does not count):
the leader's side (the fetch as it arrives, parked; served again after the append and encoded)
and the follower's (decode, the answer handled with its append, the next request made and
encoded). What a cluster spends on top of this — system calls, the event loop, wake-ups, caches
gone cold between records — is what e2e_latency.py's CPU column and latencies show beside it
(docs/latency.md).
`--evict-mb N` puts back the cold caches: before each stage that in a cluster follows another
process (the follower's fetch arriving, the produce that wakes it, the follower's read of the
answer) it copies N MB, so that the stage starts with this process's code and objects pushed out
of the CPU caches, as on a machine whose cores five processes share.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from gregor.broker.peer_channel import decode_response  # noqa: E402
from gregor.metadata.image import PartitionRegistration  # noqa: E402
from gregor.protocol.headers import encode_request, encode_response, parse_request_header  # noqa: E402
from gregor.protocol.messages import FetchRequest, FetchResponse  # noqa: E402
from gregor.protocol.primitives import Reader  # noqa: E402
from gregor.records.record import BatchBuilder  # noqa: E402
from gregor.replication.config import ReplicationConfig  # noqa: E402
from gregor.replication.delayed_fetch import DelayedFetches  # noqa: E402
from gregor.replication.effects import SendFetch  # noqa: E402
from gregor.replication.fetch_sessions import FetchSessions  # noqa: E402
from gregor.replication.fetcher_links import FetcherLinks, Outgoing  # noqa: E402
from gregor.replication.follower_fetch import serve_follower_fetch  # noqa: E402
from gregor.replication.partition import Partition  # noqa: E402
from gregor.storage.log import Log, LogConfig  # noqa: E402

FETCH = 1
VERSION = 13
LEADER, FOLLOWER = 1, 2
WARMUP = 500
CHUNK = 500
STAGES = ("leader: fetch parked", "leader: woken, served, encoded", "follower: decode",
          "follower: answer and append", "follower: next request", "follower: encode")


class _Evictor:
    """Called between the stages that run in different processes, or after other processes in a
    cluster: copies `megabytes` MB, which pushes this process's code and objects out of the CPU
    caches as the other processes sharing a core do (0: does nothing, warm caches)."""

    def __init__(self, megabytes: int) -> None:
        self._source = bytes(megabytes << 20)
        self._target = bytearray(megabytes << 20)

    def __call__(self) -> None:
        if self._source:
            self._target[:] = self._source


class Round:
    """A leader and a follower of `1 + idle` partitions, the first one written to."""

    def __init__(self, root: str, idle: int, evict_mb: int = 0) -> None:
        self.now = 1_000_000
        self.evict = _Evictor(evict_mb)
        config = ReplicationConfig()
        registration = PartitionRegistration(replicas=(LEADER, FOLLOWER), isr=(LEADER, FOLLOWER), leader=LEADER,
                                             leader_epoch=1, partition_epoch=1)
        topics = [("records", uuid.uuid4(), 0)] + [("__consumer_offsets", uuid.UUID(int=1), i) for i in range(idle)]
        self.names = {topic_id: name for name, topic_id, _ in topics}
        self.leaders: dict[tuple[str, int], Partition] = {}
        self.links = FetcherLinks(FOLLOWER, config.replica_fetch_wait_max_ms, lambda partition: True)
        for name, topic_id, index in topics:
            for broker in (LEADER, FOLLOWER):
                log = Log(os.path.join(root, str(broker), f"{name}-{index}"), LogConfig(), self.now)
                partition = Partition(name, index, topic_id, log, broker, config)
                effects = partition.apply_registration(registration, self.now)
                if broker == LEADER:
                    self.leaders[partition.key] = partition
                else:
                    self._add(partition, effects)
        self.written = self.leaders[("records", 0)]
        self.sessions = FetchSessions()
        self.parked: DelayedFetches[int] = DelayedFetches()  # the leader's purgatory of follower fetches
        self.correlation_id = 0
        self.chunks: list[list[float]] = []  # seconds per stage, per CHUNK rounds

    def partition(self, name: str, index: int) -> Partition | None:
        return self.leaders.get((name, index))

    def _add(self, partition: Partition, effects: list[Any]) -> None:
        for effect in effects:
            if isinstance(effect, SendFetch):
                self.links.add(partition, effect)

    def _request(self) -> tuple[Outgoing, bytes]:
        (outgoing,) = self.links.ready()
        self.correlation_id += 1
        return outgoing, encode_request(self.correlation_id, "replica-fetcher-2", outgoing.request, VERSION)

    def run(self, rounds: int) -> None:
        outgoing, frame = self._request()
        clock = time.perf_counter
        times = [0.0] * len(STAGES)
        evict = self.evict
        for number in range(rounds):
            evict()
            t0 = clock()
            view = memoryview(frame)[4:]
            header, body = parse_request_header(view)
            request = FetchRequest.decode(Reader(view, body), VERSION)
            session = self.sessions.open(request, FOLLOWER, True)
            assert not isinstance(session, FetchResponse)
            served = serve_follower_fetch(request, FOLLOWER, True, self.partition, self.names.get,
                                          self.now, session)
            waits = served.must_wait(request)
            if waits:
                self.parked.park(served.keys, self.now + request.max_wait_ms, number)
            t1 = clock()
            evict()  # the produce that wakes the fetch comes later, after other processes ran
            if waits:
                self.now += 1
                builder = BatchBuilder()
                builder.append(self.now, None, b"x" * 100)
                self.written.append_as_leader(builder.build(), self.now, required_acks=-1)
            t2 = clock()
            if waits:
                due = self.parked.check(self.written.key)
                for key in self.written.take_woken_sessions():  # as `HostedPartitions.on_leader_append`
                    due += self.parked.check(key)
                assert due == [number], "the append did not wake the fetch"
            served = serve_follower_fetch(request, FOLLOWER, True, self.partition, self.names.get,
                                          self.now, session)
            parts = encode_response(header.correlation_id, served.response(), FETCH, VERSION)
            t3 = clock()
            answer = b"".join(bytes(part) for part in parts)[4:]
            evict()  # the follower is another process
            t4 = clock()
            _, response = decode_response(memoryview(answer), FETCH, VERSION)
            t5 = clock()
            for partition, effects in self.links.on_response(outgoing.leader_id, outgoing.request_id, response,
                                                             self.now):
                self._add(partition, effects)
            t6 = clock()
            (outgoing,) = self.links.ready()
            t7 = clock()
            self.correlation_id += 1
            frame = encode_request(self.correlation_id, "replica-fetcher-2", outgoing.request, VERSION)
            t8 = clock()
            if number >= WARMUP:
                for index, spent in enumerate((t1 - t0, t3 - t2, t5 - t4, t6 - t5, t7 - t6, t8 - t7)):
                    times[index] += spent
                if (number - WARMUP + 1) % CHUNK == 0:
                    self.chunks.append(times)
                    times = [0.0] * len(STAGES)

    def per_round_us(self) -> list[float]:
        """Each stage's median over the chunks of rounds, in microseconds per round: a chunk that a
        busy machine slowed weighs no more than one."""
        return [statistics.median(chunk[stage] for chunk in self.chunks) / CHUNK * 1e6
                for stage in range(len(STAGES))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10_000,
                        help=f"rounds measured, in chunks of {CHUNK} (after {WARMUP} to warm up)")
    parser.add_argument("--idle-partitions", type=int, nargs="+", default=[0, 16, 48], metavar="N",
                        help="partitions of the follower's fetch session that never change")
    parser.add_argument("--evict-mb", type=int, default=0, metavar="MB",
                        help="copy MB megabytes before each stage that another process would precede "
                             "(caches gone cold, as in a cluster sharing its cores); 0: warm caches")
    args = parser.parse_args()
    if args.rounds < CHUNK or any(idle < 0 for idle in args.idle_partitions) or args.evict_mb < 0:
        parser.error(f"--rounds must be at least {CHUNK}, --idle-partitions and --evict-mb not negative")
    print("| idle partitions | " + " | ".join(STAGES) + " | leader | follower |")
    print("| ---: |" + " ---: |" * (len(STAGES) + 2))
    for idle in args.idle_partitions:
        root = tempfile.mkdtemp(prefix="gregor-round-")
        try:
            bench = Round(root, idle, args.evict_mb)
            bench.run(args.rounds + WARMUP)
            assert bench.written.high_watermark == bench.written.log.log_end_offset - 1, "the follower fell behind"
        finally:
            shutil.rmtree(root, ignore_errors=True)
        per_round = bench.per_round_us()
        cells = " | ".join(f"{value:.1f}" for value in per_round)
        print(f"| {idle} | {cells} | {sum(per_round[:2]):.1f} | {sum(per_round[2:]):.1f} |")


if __name__ == "__main__":
    main()
