"""python -m examples.pageviews run|generate|job|show (run from the repository root).

    run       everything: a fresh `gregor server` (unless --bootstrap-server), topics, events,
              the streaming job until it has caught up, then the results
    generate  create the topics and produce the page views (and the invalid records)
    job       the streaming job; --follow keeps it running on new events (Ctrl-C stops it)
    show      the windows in the Parquet table and what the topics hold
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
from contextlib import contextmanager
from typing import Iterator

from examples.pageviews import events
from examples.pageviews.job import Demo, run, session
from examples.pageviews.show import show


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m examples.pageviews", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("run", "generate", "job", "show"))
    parser.add_argument("--bootstrap-server", help="a running broker (run: start one when not given)")
    parser.add_argument("--work-dir", help="checkpoints and Parquet output (run: a new temporary directory)")
    parser.add_argument("--events", type=int, default=600, help="page views to generate (default 600)")
    parser.add_argument("--minutes", type=int, default=6, help="event time they span (default 6)")
    parser.add_argument("--invalid", type=int, default=6, help="invalid records among them (default 6)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--max-offsets-per-trigger", type=int, help="cap each micro-batch (more, smaller batches)")
    parser.add_argument("--follow", action="store_true", help="job: keep running (trigger every 5 s)")
    args = parser.parse_args(argv)
    if args.command != "run" and (args.bootstrap_server is None or args.work_dir is None):
        parser.error(f"{args.command} needs --bootstrap-server and --work-dir")
    return args


@contextmanager
def gregor_server(data_dir: str) -> Iterator[str]:
    """A single-node `gregor server` on a free loopback port, stopped (SIGTERM) afterwards."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = open(os.path.join(data_dir, "server.log"), "ab")
    server = subprocess.Popen([sys.executable, "-m", "gregor.cli.main", "server",
                               "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                               "--override", f"log.dirs={os.path.join(data_dir, 'data')}"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            if server.poll() is not None:
                raise SystemExit(f"gregor server exited with {server.returncode}; see {log.name}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"gregor server did not listen on 127.0.0.1:{port}; see {log.name}") from None
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def generate(demo: Demo, args: argparse.Namespace) -> None:
    events.create_topics(demo.bootstrap, demo.views_topic, demo.results_topic, demo.dead_letter_topic)
    generated = events.generate(args.seed, args.events, args.minutes, args.invalid)
    sent = events.produce(demo.bootstrap, demo.views_topic, generated, args.seed)
    print(f"produced {sent} records to {demo.views_topic} ({len(generated.invalid)} of them invalid)")


def require_java() -> None:
    """Spark runs on a JVM: say so plainly instead of letting pyspark fail deep in its gateway."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    sys.exit("pageviews: Spark needs a Java 17+ runtime and none was found (no `java` on PATH, no JAVA_HOME); "
             "install one, e.g. `apt-get install openjdk-17-jre-headless` (`bash scripts/setup.sh --test` does)")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.command != "generate":
        require_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="gregor-pageviews-")
    os.makedirs(work_dir, exist_ok=True)
    if args.command == "run" and args.bootstrap_server is None:
        with gregor_server(work_dir) as bootstrap:
            everything(Demo(bootstrap, work_dir), args)
        return
    demo = Demo(args.bootstrap_server, work_dir)
    if args.command == "run":
        everything(demo, args)
    elif args.command == "generate":
        generate(demo, args)
    elif args.command == "job":
        run(session(os.path.join(work_dir, "spark-local")), demo, available_now=not args.follow,
            max_offsets_per_trigger=args.max_offsets_per_trigger)
    else:
        print(show(session(os.path.join(work_dir, "spark-local")), demo))


def everything(demo: Demo, args: argparse.Namespace) -> None:
    print(f"broker {demo.bootstrap}, working directory {demo.work_dir}")
    generate(demo, args)
    spark = session(os.path.join(demo.work_dir, "spark-local"))
    run(spark, demo, max_offsets_per_trigger=args.max_offsets_per_trigger)
    print(show(spark, demo))
    spark.stop()


if __name__ == "__main__":
    main()
