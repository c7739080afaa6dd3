"""`gregor perf producer` and `gregor perf consumer` through their command lines against a real
broker: the figures they print agree with each other and with what was sent; the throttle is
checked on the rate the tool reports (and, exactly, on a simulated clock), never on how long a
test took."""

from __future__ import annotations

import re
import uuid

import pytest

from gregor.cli.perf import CONSUMER_HEADER, DETAILED_HEADER, MB, Throttler, percentiles
from tests.cli.conftest import gregor, in_process, one_error_line

TOTALS = re.compile(
    r"^(?P<count>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99\.9th\.$")
PROGRESS = re.compile(
    r"^\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency\.$")
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"


@pytest.fixture
def topic(bootstrap) -> str:
    name = f"perf-{uuid.uuid4().hex[:8]}"
    assert gregor("topics", *bootstrap, "--create", "--topic", name, "--partitions", "2").returncode == 0
    return name


def totals(stdout: str) -> dict[str, float]:
    match = TOTALS.match(stdout.strip().splitlines()[-1])
    assert match, stdout
    return {name: float(value) for name, value in match.groupdict().items()}


def consumer_values(stdout: str) -> dict[str, str]:
    lines = stdout.strip().splitlines()
    assert lines[0] == CONSUMER_HEADER
    values = lines[1].split(", ")
    assert len(values) == 10, lines[1]
    return dict(zip(CONSUMER_HEADER.split(", "), values))


def test_producer_figures_agree_and_the_consumer_reads_them_back(bootstrap, topic):
    produced = gregor("perf", "producer", *bootstrap, "--topic", topic, "--num-records", "2000",
                      "--record-size", "100", "--throughput", "-1", "--producer-props", "acks=all", "linger.ms=5")
    assert produced.returncode == 0, produced.stderr
    assert produced.stderr == ""
    figures = totals(produced.stdout)
    assert figures["count"] == 2000
    assert figures["p50"] <= figures["p95"] <= figures["p99"] <= figures["p999"] <= figures["max"]
    assert figures["avg"] <= figures["max"]
    assert figures["mb"] == pytest.approx(figures["rate"] * 100 / MB, abs=0.006)

    consumed = gregor("perf", "consumer", *bootstrap, "--topic", topic, "--messages", "2000", "--timeout", "5000")
    assert consumed.returncode == 0, consumed.stderr
    values = consumer_values(consumed.stdout)
    assert re.fullmatch(TIME, values["start.time"]) and re.fullmatch(TIME, values["end.time"])
    assert values["data.consumed.in.nMsg"] == "2000"
    assert values["data.consumed.in.MB"] == f"{2000 * 100 / MB:.4f}"
    assert int(values["rebalance.time.ms"]) >= 0 and int(values["fetch.time.ms"]) >= 0


def test_throughput_limits_the_reported_rate(bootstrap, topic):
    """1500 records at 250/s: the rate the tool reports stays at the target (a throttle that
    sleeps only when ahead cannot exceed it), and the run is long enough for a progress line."""
    produced = gregor("perf", "producer", *bootstrap, "--topic", topic, "--num-records", "1500",
                      "--record-size", "20", "--throughput", "250")
    assert produced.returncode == 0, produced.stderr
    lines = produced.stdout.strip().splitlines()
    assert len(lines) >= 2 and all(PROGRESS.match(line) for line in lines[:-1]), produced.stdout
    figures = totals(produced.stdout)
    assert figures["count"] == 1500
    assert 250 / 4 < figures["rate"] <= 250 * 1.02


def test_payload_file_and_detailed_consumer_stats(bootstrap, topic, tmp_path):
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha;beta;gamma;")
    produced = gregor("perf", "producer", *bootstrap, "--topic", topic, "--num-records", "30",
                      "--payload-file", str(payloads), "--payload-delimiter", ";", "--throughput", "-1")
    assert produced.returncode == 0, produced.stderr
    lines = produced.stdout.strip().splitlines()
    assert lines[:2] == [f"Reading payloads from: {payloads}", "Number of messages read: 3"]
    assert totals(produced.stdout)["count"] == 30

    detailed = gregor("perf", "consumer", *bootstrap, "--topic", topic, "--messages", "30", "--group",
                      f"perf-{uuid.uuid4().hex[:6]}", "--show-detailed-stats", "--reporting-interval", "1")
    assert detailed.returncode == 0, detailed.stderr
    rows = detailed.stdout.strip().splitlines()
    assert rows[0] == DETAILED_HEADER and len(rows) >= 2
    for row in rows[1:]:
        fields = row.split(", ")
        assert len(fields) == 10 and re.fullmatch(TIME, fields[0]) and fields[1] == "0"
    assert int(rows[-1].split(", ")[4]) <= 30


def test_consumer_gives_up_after_its_timeout(bootstrap, topic):
    result = gregor("perf", "consumer", *bootstrap, "--topic", topic, "--messages", "10", "--from-latest",
                    "--timeout", "1000", "--hide-header")
    assert result.returncode == 0, result.stderr
    assert "WARNING: Exiting before consuming the expected number of messages: timeout (1000 ms)" in result.stderr
    values = result.stdout.strip().split(", ")
    assert len(values) == 10 and values[4] == "0"


def test_consumer_refuses_a_missing_topic(bootstrap):
    result = gregor("perf", "consumer", *bootstrap, "--topic", f"absent-{uuid.uuid4().hex[:6]}", "--messages", "1",
                    "--timeout", "3000")
    assert result.returncode == 1
    assert "does not exist" in one_error_line(result)


@pytest.mark.parametrize("args, message", [
    (["perf"], "give the test to run"),
    (["perf", "producer", "--num-records", "5", "--record-size", "1", "--throughput", "-1"], "needs --topic"),
    (["perf", "producer", "--topic", "t", "--record-size", "1", "--throughput", "-1"], "needs --num-records"),
    (["perf", "producer", "--topic", "t", "--num-records", "5", "--record-size", "1"], "needs --throughput"),
    (["perf", "producer", "--topic", "t", "--num-records", "5", "--throughput", "-1"], "--record-size and --payload"),
    (["perf", "producer", "--topic", "t", "--num-records", "5", "--record-size", "1", "--payload-file", "f",
      "--throughput", "-1"], "exactly one of --record-size"),
    (["perf", "producer", "--topic", "t", "--num-records", "0", "--record-size", "1", "--throughput", "-1"],
     "--num-records must be positive"),
    (["perf", "producer", "--topic", "t", "--num-records", "5", "--record-size", "1", "--throughput", "0"],
     "--throughput must be"),
    (["perf", "producer", "--topic", "t", "--num-records", "5", "--record-size", "1", "--throughput", "-1",
      "--producer-props", "novalue"], "expected key=value"),
    (["perf", "producer", "--topic", "t", "--num-records", "5", "--record-size", "1", "--throughput", "-1",
      "--print-metrics"], "unrecognized arguments"),
    (["perf", "consumer", "--topic", "t"], "needs --messages"),
    (["perf", "consumer", "--messages", "5"], "exactly one of --topic and --include"),
    (["perf", "consumer", "--topic", "t", "--messages", "5", "--timeout", "0"], "--timeout must be positive"),
    (["perf", "consumer", "--topic", "t", "--messages", "many"], "invalid int value"),
])
def test_wrong_arguments(capsys, args, message):
    result = in_process(capsys, *args[:2], "--bootstrap-server", "127.0.0.1:9", *args[2:]) if len(args) > 1 \
        else in_process(capsys, *args)
    assert result.returncode == 2
    assert message in one_error_line(result)


def test_producer_needs_a_bootstrap_server(capsys):
    result = in_process(capsys, "perf", "producer", "--topic", "t", "--num-records", "5", "--record-size", "1",
                        "--throughput", "-1")
    assert result.returncode == 2
    assert "--bootstrap-server" in one_error_line(result)


def test_unreachable_broker(unreachable):
    produced = gregor("perf", "producer", *unreachable, "--topic", "t", "--num-records", "10", "--record-size", "10",
                      "--throughput", "-1", "--producer-props", "max.block.ms=1500")
    assert produced.returncode == 1
    assert "cannot reach the cluster" in one_error_line(produced)
    consumed = gregor("perf", "consumer", *unreachable, "--topic", "t", "--messages", "10", "--timeout", "1500")
    assert consumed.returncode == 1
    assert "cannot reach the cluster" in one_error_line(consumed)


class SimulatedClock:
    """Time that passes only when the throttle sleeps or a send is said to cost some."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept += 1
        self.now += seconds


@pytest.mark.parametrize("rate, send_cost", [(250, 0.0), (1000, 0.0003), (50, 0.05)])
def test_the_throttle_holds_the_target_rate(rate, send_cost):
    """On a simulated clock: record n goes no earlier than start + n / rate, and no later than
    the sends' own cost makes it (a slow sender is never slowed further)."""
    clock = SimulatedClock()
    throttler = Throttler(rate, clock=clock, sleep=clock.sleep)
    start = clock.now
    for sent in range(500):
        throttler.wait_for_turn(sent)
        due = start + sent / rate
        assert clock.now >= due - Throttler.MIN_SLEEP_S
        assert clock.now <= max(due, start + sent * send_cost) + 1e-9
        clock.now += send_cost
    assert (clock.now - start) == pytest.approx(max(499 / rate + send_cost, 500 * send_cost), rel=0.01)
    unlimited = Throttler(-1, clock=clock, sleep=clock.sleep)
    slept = clock.slept
    for sent in range(100):
        unlimited.wait_for_turn(sent)
    assert clock.slept == slept


def test_percentiles_pick_as_kafka_does():
    assert percentiles(list(range(1000, 0, -1)), (0.5, 0.95, 0.99, 0.999)) == [501, 951, 991, 1000]
    assert percentiles([7], (0.5, 0.999)) == [7, 7]
    assert percentiles([], (0.5,)) == [0]
