"""`gregor perf producer|consumer`: throughput and latency tests, as kafka-producer-perf-test.sh
and kafka-consumer-perf-test.sh, printing what they print.

The producer test sends `--num-records` records as fast as `--throughput` allows (a throttle
that sleeps whenever the test is ahead of the target rate) and measures each record's latency
from `send` to its acknowledgement (the delivery callback). The consumer test joins a group,
reads `--messages` records and reports the data rate with and without the time the group took
to assign partitions.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from datetime import datetime
from typing import Any, Callable

from gregor.cli.common import (
    ToolError, UsageError, add_tool, client_config, guarded, key_value, missing_topic, properties_from,
    read_properties_file, unescape,
)
from gregor.client import Consumer, ConsumerRebalanceListener, KafkaException, Producer, RecordMetadata

DEFAULT_MAX_BLOCK_MS = 5000
PRODUCER_REPORT_INTERVAL_S = 5.0
MAX_LATENCY_SAMPLES = 500_000
PERCENTILES = (0.5, 0.95, 0.99, 0.999)
MB = 1024 * 1024

CONSUMER_HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                   "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DETAILED_HEADER = ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                   "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")

EPILOG = """examples:
  gregor perf producer --bootstrap-server localhost:9092 --topic perf --num-records 100000 \\
      --record-size 100 --throughput -1 --producer-props acks=all linger.ms=5
  gregor perf consumer --bootstrap-server localhost:9092 --topic perf --messages 100000
"""

PRODUCER_EPILOG = """examples:
  gregor perf producer --bootstrap-server localhost:9092 --topic perf --num-records 100000 \\
      --record-size 100 --throughput -1
  gregor perf producer --topic perf --num-records 50000 --record-size 1024 --throughput 2000 \\
      --producer-props bootstrap.servers=localhost:9092 acks=1 compression.type=lz4
  gregor perf producer --bootstrap-server localhost:9092 --topic perf --num-records 1000 \\
      --payload-file events.txt --throughput 100 --producer.config producer.properties

output: a progress line about every 5 s, then the totals:
  N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, P ms 50th,
  P ms 95th, P ms 99th, P ms 99.9th.
"""

CONSUMER_EPILOG = f"""examples:
  gregor perf consumer --bootstrap-server localhost:9092 --topic perf --messages 100000
  gregor perf consumer --bootstrap-server localhost:9092 --topic perf --messages 100000 \\
      --group perf-readers --show-detailed-stats --reporting-interval 1000

output (one line of values under the header):
  {CONSUMER_HEADER}
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "perf", "producer and consumer performance tests",
                      "Measure producer and consumer throughput and latency "
                      "(kafka-producer-perf-test.sh, kafka-consumer-perf-test.sh).", EPILOG)
    parser.set_defaults(run=run_missing)
    tests = parser.add_subparsers(dest="perf_test", metavar="<test>")
    _register_producer(tests)
    _register_consumer(tests)


def _register_producer(tests: argparse._SubParsersAction) -> None:
    parser = add_tool(tests, "producer", "send records and report throughput and latency",
                      "Send records to a topic at a given rate and report records/s, MB/s and the "
                      "send-to-acknowledgement latency (kafka-producer-perf-test.sh).", PRODUCER_EPILOG)
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                        help="the brokers to connect to (or bootstrap.servers in --producer-props or the file)")
    parser.add_argument("--topic", metavar="TOPIC", help="the topic to produce to (required)")
    parser.add_argument("--num-records", type=int, metavar="N", help="how many records to send (required)")
    parser.add_argument("--record-size", type=int, metavar="BYTES",
                        help="the size of each record's value (this or --payload-file is required)")
    parser.add_argument("--payload-file", metavar="FILE",
                        help="send values picked at random from this file, split by --payload-delimiter")
    parser.add_argument("--payload-delimiter", default="\\n", metavar="TEXT",
                        help="what separates the payloads of --payload-file (default: \\n)")
    parser.add_argument("--throughput", type=int, metavar="RECORDS_PER_SEC",
                        help="the highest rate to send at, records/s; -1 for no limit (required)")
    parser.add_argument("--producer-props", type=key_value, nargs="+", metavar="KEY=VALUE",
                        help="producer configs (they win over --producer.config)")
    parser.add_argument("--producer.config", dest="producer_config", metavar="FILE",
                        help="a properties file of producer configs")
    parser.set_defaults(run=run_producer)


def _register_consumer(tests: argparse._SubParsersAction) -> None:
    parser = add_tool(tests, "consumer", "read records and report throughput",
                      "Read records of a topic in a consumer group and report MB/s and records/s "
                      "(kafka-consumer-perf-test.sh).", CONSUMER_EPILOG)
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="the brokers to connect to (required)")
    parser.add_argument("--consumer.config", "--command-config", dest="command_config", metavar="FILE",
                        help="a properties file of consumer configs")
    parser.add_argument("--topic", metavar="TOPIC", help="the topic to read")
    parser.add_argument("--include", metavar="REGEX", help="read every topic whose whole name matches")
    parser.add_argument("--messages", type=int, metavar="N", help="how many records to read (required)")
    parser.add_argument("--group", metavar="GROUP", help="the group to join (default perf-consumer-NNNNN)")
    parser.add_argument("--from-latest", action="store_true",
                        help="without a committed offset start at the end of the log, not at its start")
    parser.add_argument("--fetch-size", type=int, metavar="BYTES",
                        help="max.partition.fetch.bytes (default 1048576)")
    parser.add_argument("--timeout", type=int, default=10_000, metavar="MS",
                        help="give up after this long without a record; also bounds reaching the cluster "
                             "(default 10000)")
    parser.add_argument("--reporting-interval", type=int, default=5000, metavar="MS",
                        help="with --show-detailed-stats: how often to print a line (default 5000)")
    parser.add_argument("--show-detailed-stats", action="store_true",
                        help="print a line per reporting interval instead of the totals")
    parser.add_argument("--hide-header", action="store_true", help="do not print the header line")
    parser.set_defaults(run=run_consumer)


@guarded("perf")
def run_missing(args: argparse.Namespace) -> int:
    raise UsageError("give the test to run: gregor perf producer ... or gregor perf consumer ...")


# ---- producer ----

class Throttler:
    """Keeps a sender at `per_second` records/s (negative: no limit): before a record is sent it
    sleeps until the time that record is due, start + sent / rate, if the sender is ahead.

    Due times add up from the start, so sleeps cut short or taken late do not make the
    average rate drift; sleeps under a millisecond are skipped and caught up by the next one."""

    MIN_SLEEP_S = 0.001

    def __init__(self, per_second: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._per_second = per_second
        self._clock = clock
        self._sleep = sleep
        self._start = clock()

    def wait_for_turn(self, sent: int) -> None:
        """Block until the record after `sent` records may go."""
        if self._per_second < 0:
            return
        ahead = self._start + sent / self._per_second - self._clock()
        if ahead >= self.MIN_SLEEP_S:
            self._sleep(ahead)


class ProducerStats:
    """Per-record latencies (send to acknowledgement, ms) with Kafka's windows and totals.

    `record` runs on the producer's network thread (delivery callbacks), the totals on the main
    thread after flush; a lock keeps the counters consistent between the two."""

    def __init__(self, num_records: int, clock: Callable[[], float] = time.monotonic,
                 report_interval_s: float = PRODUCER_REPORT_INTERVAL_S) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._sampling = max(1, num_records // min(num_records, MAX_LATENCY_SAMPLES))
        self._samples: list[int] = []
        self._report_interval_s = report_interval_s
        self.start = clock()
        self.count = 0
        self.bytes = 0
        self.total_latency = 0
        self.max_latency = 0
        self._iteration = 0
        self._window = _Window(self.start)

    def record(self, latency_ms: int, size: int) -> None:
        with self._lock:
            self.count += 1
            self.bytes += size
            self.total_latency += latency_ms
            self.max_latency = max(self.max_latency, latency_ms)
            if self._iteration % self._sampling == 0:
                self._samples.append(latency_ms)
            self._iteration += 1
            self._window.add(latency_ms, size)
            now = self._clock()
            if now - self._window.start >= self._report_interval_s:
                print(self._window.line(now), flush=True)
                self._window = _Window(now)

    def totals_line(self) -> str:
        with self._lock:
            elapsed = self._clock() - self.start
            records_per_sec = self.count / elapsed if elapsed > 0 else 0.0
            mb_per_sec = self.bytes / MB / elapsed if elapsed > 0 else 0.0
            average = self.total_latency / self.count if self.count else 0.0
            p50, p95, p99, p999 = percentiles(self._samples, PERCENTILES)
            return (f"{self.count} records sent, {records_per_sec:f} records/sec ({mb_per_sec:.2f} MB/sec), "
                    f"{average:.2f} ms avg latency, {float(self.max_latency):.2f} ms max latency, "
                    f"{p50} ms 50th, {p95} ms 95th, {p99} ms 99th, {p999} ms 99.9th.")


class _Window:
    """The records acknowledged since the last progress line."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.count = 0
        self.bytes = 0
        self.total_latency = 0
        self.max_latency = 0

    def add(self, latency_ms: int, size: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency_ms
        self.max_latency = max(self.max_latency, latency_ms)

    def line(self, now: float) -> str:
        elapsed = now - self.start
        return (f"{self.count} records sent, {self.count / elapsed:.1f} records/sec "
                f"({self.bytes / MB / elapsed:.2f} MB/sec), {self.total_latency / self.count:.1f} ms avg latency, "
                f"{float(self.max_latency):.1f} ms max latency.")


def percentiles(samples: list[int], points: tuple[float, ...]) -> list[int]:
    """The sample at index floor(p * n) of the sorted samples, as Kafka's tool picks them."""
    if not samples:
        return [0 for _ in points]
    ordered = sorted(samples)
    return [ordered[min(int(point * len(ordered)), len(ordered) - 1)] for point in points]


def _payloads(args: argparse.Namespace) -> list[bytes]:
    """One random value of --record-size uppercase letters, or the payloads of --payload-file."""
    if (args.record_size is None) == (args.payload_file is None):
        raise UsageError("give exactly one of --record-size and --payload-file")
    if args.record_size is not None:
        if args.record_size <= 0:
            raise UsageError(f"--record-size must be positive, got {args.record_size}")
        rng = random.Random()
        return [bytes(rng.randrange(65, 91) for _ in range(args.record_size))]
    if not args.payload_delimiter:
        raise UsageError("--payload-delimiter must not be empty")
    try:
        with open(args.payload_file, "rb") as source:
            text = source.read()
    except OSError as error:
        raise ToolError(f"cannot read --payload-file {args.payload_file}: {error.strerror or error}") from None
    print(f"Reading payloads from: {args.payload_file}", flush=True)
    payloads = [item for item in text.split(unescape(args.payload_delimiter).encode()) if item]
    if not payloads:
        raise ToolError(f"--payload-file {args.payload_file} holds no payload")
    print(f"Number of messages read: {len(payloads)}", flush=True)
    return payloads


def _producer_config(args: argparse.Namespace) -> dict[str, Any]:
    """--producer.config, then --producer-props, then --bootstrap-server; waits bounded by
    max.block.ms (5000 unless given) so that an unreachable cluster is reported soon."""
    config: dict[str, Any] = read_properties_file(args.producer_config)
    config.update(properties_from(args.producer_props))
    if args.bootstrap_server:
        config["bootstrap.servers"] = args.bootstrap_server
    if not config.get("bootstrap.servers"):
        raise UsageError("missing required option --bootstrap-server HOST:PORT "
                         "(or bootstrap.servers in --producer-props or --producer.config)")
    args.bootstrap_server = config["bootstrap.servers"]
    config.setdefault("client.id", "perf-producer-client")
    config.setdefault("max.block.ms", DEFAULT_MAX_BLOCK_MS)
    try:
        args.resolved_timeout_ms = int(config["max.block.ms"])
    except ValueError:
        raise UsageError(f"max.block.ms must be an integer, got {config['max.block.ms']!r}") from None
    return config


def _check_producer_options(args: argparse.Namespace) -> None:
    for flag, value in (("--topic", args.topic), ("--num-records", args.num_records),
                        ("--throughput", args.throughput)):
        if value is None:
            raise UsageError(f"perf producer needs {flag}")
    if args.num_records <= 0:
        raise UsageError(f"--num-records must be positive, got {args.num_records}")
    if args.throughput == 0 or args.throughput < -1:
        raise UsageError(f"--throughput must be a positive number of records/s or -1 (no limit), "
                         f"got {args.throughput}")


@guarded("perf producer")
def run_producer(args: argparse.Namespace) -> int:
    _check_producer_options(args)
    payloads = _payloads(args)
    config = _producer_config(args)
    rng = random.Random()
    failures: list[KafkaException] = []
    with Producer(config) as producer:
        stats = ProducerStats(args.num_records)
        throttler = Throttler(args.throughput)
        for sent in range(args.num_records):
            payload = payloads[0] if len(payloads) == 1 else rng.choice(payloads)
            throttler.wait_for_turn(sent)
            producer.send(args.topic, payload, callback=_completion(stats, failures, time.monotonic(), len(payload)))
        producer.flush()
        print(stats.totals_line(), flush=True)
    if failures:
        raise ToolError(f"{len(failures)} of {args.num_records} records were not sent; the first: {failures[0]}")
    return 0


def _completion(stats: ProducerStats, failures: list[KafkaException], sent_at: float,
                size: int) -> Callable[[RecordMetadata | None, KafkaException | None], None]:
    """The delivery callback of one record: its latency into the stats, or its error kept."""
    def completed(metadata: RecordMetadata | None, error: KafkaException | None) -> None:
        if error is not None:
            failures.append(error)
            return
        stats.record(int((time.monotonic() - sent_at) * 1000), size)
    return completed


# ---- consumer ----

class RebalanceTimer(ConsumerRebalanceListener):
    """Time spent without partitions while the group assigns them (Kafka's rebalance.time.ms)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._owned: set[Any] = set()
        self._waiting_since: float | None = clock()
        self.total_ms = 0
        self.round_ms = 0

    def on_partitions_revoked(self, partitions: list[Any]) -> None:
        self._owned.difference_update(partitions)
        if not self._owned:
            self._waiting_since = self._clock()

    def on_partitions_assigned(self, partitions: list[Any]) -> None:
        if not self._owned and self._waiting_since is not None:
            waited = int((self._clock() - self._waiting_since) * 1000)
            self.total_ms += waited
            self.round_ms += waited
            self._waiting_since = None
        self._owned.update(partitions)


def format_time(epoch_s: float) -> str:
    """Kafka's default --date-format, yyyy-MM-dd HH:mm:ss:SSS, in local time."""
    moment = datetime.fromtimestamp(epoch_s)
    return moment.strftime("%Y-%m-%d %H:%M:%S:") + f"{moment.microsecond // 1000:03d}"


def consumer_totals(start: float, end: float, elapsed_s: float, data_bytes: int, records: int,
                    rebalance_ms: int) -> str:
    """The values line under CONSUMER_HEADER."""
    mb = data_bytes / MB
    fetch_ms = int(elapsed_s * 1000) - rebalance_ms
    return ", ".join((format_time(start), format_time(end), f"{mb:.4f}", f"{_rate(mb, elapsed_s):.4f}",
                      str(records), f"{_rate(records, elapsed_s):.4f}", str(rebalance_ms), str(fetch_ms),
                      f"{_rate(mb, fetch_ms / 1000):.4f}", f"{_rate(records, fetch_ms / 1000):.4f}"))


def _rate(amount: float, seconds: float) -> float:
    return amount / seconds if seconds > 0 else 0.0


def _check_consumer_options(args: argparse.Namespace) -> None:
    if args.messages is None:
        raise UsageError("perf consumer needs --messages")
    if (args.topic is None) == (args.include is None):
        raise UsageError("give exactly one of --topic and --include")
    for flag, value in (("--messages", args.messages), ("--timeout", args.timeout),
                        ("--reporting-interval", args.reporting_interval), ("--fetch-size", args.fetch_size)):
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be positive, got {value}")


def _consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    config = client_config(args)
    config["group.id"] = args.group or f"perf-consumer-{random.randrange(100_000)}"
    config["auto.offset.reset"] = "latest" if args.from_latest else "earliest"
    config.setdefault("client.id", "perf-consumer-client")
    if args.fetch_size is not None:
        config["max.partition.fetch.bytes"] = args.fetch_size
    return config


@guarded("perf consumer")
def run_consumer(args: argparse.Namespace) -> int:
    _check_consumer_options(args)
    config = _consumer_config(args)
    if not args.hide_header:
        print(DETAILED_HEADER if args.show_detailed_stats else CONSUMER_HEADER, flush=True)
    with Consumer(config) as consumer:
        if args.topic is not None and not consumer.partitions_for(args.topic):
            raise ToolError(missing_topic(args.topic))
        timer = RebalanceTimer(time.monotonic)
        consumer.subscribe([args.topic] if args.topic is not None else "^(" + args.include + ")$", timer)
        start_wall, start = time.time(), time.monotonic()
        records, data_bytes = _consume(consumer, args, timer)
        end_wall, elapsed = time.time(), time.monotonic() - start
    if records < args.messages:
        print(f"WARNING: Exiting before consuming the expected number of messages: timeout ({args.timeout} ms) "
              f"exceeded. You can use the --timeout option to increase the timeout.", file=sys.stderr, flush=True)
    if not args.show_detailed_stats:
        print(consumer_totals(start_wall, end_wall, elapsed, data_bytes, records, timer.total_ms), flush=True)
    return 0


def _consume(consumer: Consumer, args: argparse.Namespace, timer: RebalanceTimer) -> tuple[int, int]:
    """Poll until --messages records or --timeout ms without one; detailed lines on the way."""
    records = data_bytes = 0
    last_records = last_bytes = 0
    now = last_report = last_record = time.monotonic()
    while records < args.messages and (now - last_record) * 1000 <= args.timeout:
        polled = consumer.poll(0.1)
        now = time.monotonic()
        for record in polled:
            if records >= args.messages:
                break
            last_record = now
            records += 1
            data_bytes += len(record.key or b"") + len(record.value or b"")
            if (now - last_report) * 1000 >= args.reporting_interval:
                if args.show_detailed_stats:
                    print(_detailed_line(data_bytes, last_bytes, records, last_records, last_report, now,
                                         timer.round_ms), flush=True)
                timer.round_ms = 0
                last_report, last_records, last_bytes = now, records, data_bytes
    return records, data_bytes


def _detailed_line(data_bytes: int, last_bytes: int, records: int, last_records: int, since: float, now: float,
                   rebalance_ms: int) -> str:
    """One interval: totals so far, the interval's rates, and its rates without the rebalance time."""
    elapsed_s = now - since
    interval_mb = (data_bytes - last_bytes) / MB
    interval_records = records - last_records
    fetch_ms = int(elapsed_s * 1000) - rebalance_ms
    return ", ".join((format_time(time.time()), "0", f"{data_bytes / MB:.4f}", f"{_rate(interval_mb, elapsed_s):.4f}",
                      str(records), f"{_rate(interval_records, elapsed_s):.4f}", str(rebalance_ms), str(fetch_ms),
                      f"{_rate(interval_mb, fetch_ms / 1000):.4f}",
                      f"{_rate(interval_records, fetch_ms / 1000):.4f}"))
