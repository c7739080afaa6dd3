"""The page-view demo (examples/pageviews) run as a user runs it, in a subprocess: its window
counts against counts computed here from the same seeded events, invalid records set aside in the
dead-letter topic, and a kill -9 of the streaming job mid-run followed by a restart from its
checkpoint (Parquet exactly once through `_spark_metadata`; the topics exactly once for
read_committed consumers, through the sink's transactions). The restart runs the same job
(`job.run`) in the tests' Spark session, which is warm already, rather than in a third new JVM.
Topics are read back with confluent-kafka (read_committed)."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from examples.pageviews import events
from examples.pageviews.job import Demo, run
from tests.spark.test_write import consume_all

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED, EVENTS, MINUTES, INVALID = 11, 300, 4, 4
ARGS = ["--seed", str(SEED), "--events", str(EVENTS), "--minutes", str(MINUTES), "--invalid", str(INVALID)]


def demo_command(command: str, demo: Demo, *extra: str) -> list[str]:
    return [sys.executable, "-m", "examples.pageviews", command, "--bootstrap-server", demo.bootstrap,
            "--work-dir", demo.work_dir, *ARGS, *extra]


def closed_windows(generated: events.Generated) -> dict[str, dict]:
    """Per `<window start ms>|<page>`, views and unique users of every window the final watermark
    (newest event time minus one minute) has closed, counted in plain Python."""
    watermark = max(event["ts"] for event in generated.events) - 60_000
    views: collections.Counter = collections.Counter()
    users: dict[tuple[int, str], set] = collections.defaultdict(set)
    for event in generated.events:
        window = (event["ts"] - event["ts"] % 60_000, event["page"])
        views[window] += 1
        users[window].add(event["user"])
    return {f"{start}|{page}": {"window_start": start, "page": page, "views": views[start, page],
                                "users": len(users[start, page])}
            for start, page in views if start + 60_000 <= watermark}


def parquet_windows(spark, demo: Demo) -> list[tuple[str, dict]]:
    rows = spark.read.parquet(demo.parquet_dir).collect()
    return sorted((f"{int(row.window_start.timestamp() * 1000)}|{row.page}",
                   {"window_start": int(row.window_start.timestamp() * 1000), "page": row.page,
                    "views": row.views, "users": row.users}) for row in rows)


def run_demo(command: list[str]) -> str:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_one_command_counts_every_closed_window_and_sets_invalid_records_aside(spark, broker_factory, tmp_path):
    demo = Demo(broker_factory().bootstrap, str(tmp_path / "work"))
    output = run_demo(demo_command("run", demo))

    generated = events.generate(SEED, EVENTS, MINUTES, INVALID)
    expected = closed_windows(generated)
    assert len(expected) >= 2 * len(events.PAGES)
    assert parquet_windows(spark, demo) == sorted(expected.items())
    results = consume_all(demo, demo.results_topic, len(expected), isolation="read_committed")
    assert sorted((record["key"].decode(), json.loads(record["value"])) for record in results) == \
        sorted(expected.items())
    dead = consume_all(demo, demo.dead_letter_topic, INVALID, isolation="read_committed")
    assert sorted(record["value"] for record in dead) == sorted(generated.invalid)
    assert all(record["key"].decode().startswith(f"{demo.views_topic}-") for record in dead)
    assert f"{len(expected)} closed windows" in output
    assert f"{len(expected)} records in topic {demo.results_topic} (read_committed), each window once" in output
    assert f"{INVALID} invalid records set aside" in output


def committed_batches(demo: Demo, query: str) -> int:
    commits = os.path.join(demo.checkpoint(query), "commits")
    return len([name for name in os.listdir(commits) if name.isdigit()]) if os.path.isdir(commits) else 0


PER_TRIGGER = 60


def test_a_job_killed_mid_run_resumes_from_its_checkpoint(spark, broker_factory, tmp_path):
    demo = Demo(broker_factory().bootstrap, str(tmp_path / "work"))
    run_demo(demo_command("generate", demo))
    job = demo_command("job", demo, "--max-offsets-per-trigger", str(PER_TRIGGER))
    log_path = tmp_path / "first-job.log"
    with open(log_path, "wb") as log:
        first = subprocess.Popen(job, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        for _ in range(1200):
            if first.poll() is not None or committed_batches(demo, "topic") >= 2:
                break
            time.sleep(0.1)
        assert first.poll() is None, \
            f"the job ended (exit {first.returncode}) before it could be killed:\n{log_path.read_text()[-3000:]}"
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the driver and its JVM: a crash, not a stop
        first.wait()
    run(spark, demo, max_offsets_per_trigger=PER_TRIGGER)  # what `job` runs, from the same checkpoints

    generated = events.generate(SEED, EVENTS, MINUTES, INVALID)
    expected = closed_windows(generated)
    assert parquet_windows(spark, demo) == sorted(expected.items())

    results = [(record["key"].decode(), json.loads(record["value"]))
               for record in consume_all(demo, demo.results_topic, len(expected), isolation="read_committed")]
    assert sorted(results) == sorted(expected.items())  # every closed window once, none twice
    dead = consume_all(demo, demo.dead_letter_topic, INVALID, isolation="read_committed")
    assert sorted(record["value"] for record in dead) == sorted(generated.invalid)


def test_a_missing_java_is_one_clear_line(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java there
    done = subprocess.run([sys.executable, "-m", "examples.pageviews", "show", "--bootstrap-server", "127.0.0.1:1",
                           "--work-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "needs a Java 17+ runtime" in done.stderr
