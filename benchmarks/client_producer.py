"""Gregor's Python producer beside confluent-kafka's (librdkafka) on the same Gregor broker.

    .venv/bin/python benchmarks/client_producer.py
    .venv/bin/python benchmarks/client_producer.py --records 500000 --size 100

The script starts its own `gregor server` (fresh data directory) and, for each batch size,
sends `--records` records of `--size` bytes to a new one-partition topic with each client in
turn: same acks (all), idempotence on, linger.ms 5, compression none. The clients: Gregor's sync
`Producer.send` ("gregor"), the asyncio producer's `enqueue` in one task ("gregor-aio"), the sync
producer's columnar `send_columns` with chunks of `--chunk` records from a pyarrow array
("columnar"), and librdkafka. It prints records/s and MB/s per client and the ratio to
librdkafka. All run in this process, one after the other, so they compete with the broker for
the same cores in the same way. `--rounds N` runs the clients N times in turn and reports each
client's median run (by records/s), so that a load changing on a shared machine weighs on all
of them alike.

Latency: one record in `SAMPLE_EVERY` carries a delivery callback noting when it was
acknowledged; p50/p99 are over those samples, measured during the throughput run (so they
include the time a record waits behind the ones queued before it). Gregor runs callbacks on its
I/O thread as acknowledgements arrive; librdkafka runs them only inside poll(), which this loop
calls at every sample, so its figures are late by up to one sample interval. The asyncio producer
notes a sample when its future resolves (on the same loop); the columnar run notes, per chunk,
when the chunk's last batch is acknowledged.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Producer as ConfluentProducer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from throughput import Figures, create_topic, progress, start_gregor  # noqa: E402

import pyarrow as pa  # noqa: E402

from gregor.aio import Producer as AioProducer  # noqa: E402
from gregor.client.producer import Producer  # noqa: E402


SAMPLE_EVERY = 1000


@dataclass
class Run:
    figures: Figures
    latencies_ms: list[float]

    def percentile(self, fraction: float) -> float:
        if len(self.latencies_ms) < 2:
            return float("nan")
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[round(fraction * 100) - 1]


def gregor_producer(bootstrap: str, topic: str, records: int, size: int, batch_size: int) -> Run:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "batch.size": batch_size, "buffer.memory": 64 * 1024 * 1024})
    value = b"x" * size
    producer.send(topic, value).get(30)
    latencies: list[float] = []

    def acknowledged(sent_at: float):
        return lambda metadata, error: latencies.append((time.perf_counter() - sent_at) * 1000)

    started = time.perf_counter()
    for index in range(records):
        if index % SAMPLE_EVERY:
            producer.send(topic, value)
        else:
            producer.send(topic, value, callback=acknowledged(time.perf_counter()))
            if index % 100_000 == 0:
                progress("gregor", index, records, started)
    producer.flush()
    elapsed = time.perf_counter() - started
    producer.close()
    return Run(Figures(records, elapsed, records * size), latencies)


def _config(batch_size: int) -> dict:
    return {"acks": "all", "enable.idempotence": True, "linger.ms": 5, "batch.size": batch_size,
            "buffer.memory": 64 * 1024 * 1024}


def gregor_aio_producer(bootstrap: str, topic: str, records: int, size: int, batch_size: int) -> Run:
    value = b"x" * size
    latencies: list[float] = []

    def acknowledged(sent_at: float):
        return lambda future: latencies.append((time.perf_counter() - sent_at) * 1000)

    async def run() -> float:
        async with AioProducer({"bootstrap.servers": bootstrap, **_config(batch_size)}) as producer:
            await producer.send(topic, value)
            started = time.perf_counter()
            for index in range(records):
                future = await producer.enqueue(topic, value)
                if index % SAMPLE_EVERY == 0:
                    future.add_done_callback(acknowledged(time.perf_counter()))
                    if index % 100_000 == 0:
                        progress("gregor-aio", index, records, started)
            await producer.flush()
            return time.perf_counter() - started

    elapsed = asyncio.run(run())
    return Run(Figures(records, elapsed, records * size), latencies)


def columnar_producer(bootstrap: str, topic: str, records: int, size: int, batch_size: int,
                      chunk: int = 10_000) -> Run:
    producer = Producer({"bootstrap.servers": bootstrap, **_config(batch_size)})
    values = pa.array([b"x" * size] * chunk, pa.binary())
    producer.send(topic, b"x" * size).get(30)
    latencies: list[float] = []
    futures = []
    started = time.perf_counter()
    for sent in range(0, records, chunk):
        count = min(chunk, records - sent)
        sent_at = time.perf_counter()
        future = producer.send_columns(topic, values if count == chunk else values.slice(0, count))
        last, _ = future.batches[-1]
        last.add_done_callback(lambda sent_at=sent_at: latencies.append((time.perf_counter() - sent_at) * 1000))
        futures.append(future)
        if sent % 100_000 < chunk:
            progress("columnar", sent, records, started)
    producer.flush()
    elapsed = time.perf_counter() - started
    for future in futures:
        future.get(0)
    producer.close()
    return Run(Figures(records, elapsed, records * size), latencies)


def librdkafka_producer(bootstrap: str, topic: str, records: int, size: int, batch_size: int) -> Run:
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "batch.size": batch_size,
                                  "queue.buffering.max.kbytes": 64 * 1024})
    value = b"x" * size
    producer.produce(topic, value)
    producer.flush(30)
    latencies: list[float] = []

    def acknowledged(sent_at: float):
        return lambda error, message: latencies.append((time.perf_counter() - sent_at) * 1000)

    started = time.perf_counter()
    for index in range(records):
        sampled = index % SAMPLE_EVERY == 0
        while True:
            try:
                if sampled:
                    producer.produce(topic, value, on_delivery=acknowledged(time.perf_counter()))
                else:
                    producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.001)
        if sampled:
            producer.poll(0)
            if index % 100_000 == 0:
                progress("librdkafka", index, records, started)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if remaining:
        raise SystemExit(f"librdkafka left {remaining} records undelivered")
    return Run(Figures(records, elapsed, records * size), latencies)


def median_run(runs: list[Run]) -> Run:
    """The run with the median records/s (the lower middle one of an even count)."""
    ordered = sorted(runs, key=lambda run: run.figures.records_per_second)
    return ordered[(len(ordered) - 1) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--batch-sizes", default="16384,1000000",
                        help="comma-separated batch.size values (Java's default, librdkafka's default)")
    parser.add_argument("--rounds", type=int, default=1, help="runs per client, in turn; the median is reported")
    args = parser.parse_args()
    broker = start_gregor()
    try:
        rows = []
        for batch_size in (int(item) for item in args.batch_sizes.split(",")):
            all_runs: dict[str, list[Run]] = {}
            for _ in range(max(args.rounds, 1)):
                for name, run in (("gregor", gregor_producer), ("gregor-aio", gregor_aio_producer),
                                  ("columnar", columnar_producer), ("librdkafka", librdkafka_producer)):
                    topic = f"bench-{name}-{uuid.uuid4().hex[:6]}"
                    create_topic(broker.bootstrap, topic, 1)
                    result = run(broker.bootstrap, topic, args.records, args.size, batch_size)
                    all_runs.setdefault(name, []).append(result)
                    print(f"\n{name:>10} batch.size={batch_size}: {result.figures.records_per_second:12,.0f} "
                          f"records/s {result.figures.megabytes_per_second:8.1f} MB/s", file=sys.stderr)
            runs = {name: median_run(results) for name, results in all_runs.items()}
            rows.append((batch_size, runs))
    finally:
        broker.stop()
    print(f"\nproducer, {args.records:,} records of {args.size} B, acks=all, idempotent, linger.ms=5, one partition; "
          f"latency send->ack in ms over 1 record in {SAMPLE_EVERY}"
          + (f"; median of {args.rounds} rounds" if args.rounds > 1 else ""))
    print(f"{'batch.size':>10} | {'client':>10} | {'records/s':>10} | {'MB/s':>6} | {'p50 ms':>7} | {'p99 ms':>7} | "
          "ratio")
    for batch_size, runs in rows:
        baseline = runs["librdkafka"].figures.records_per_second
        for name, result in runs.items():
            ratio = result.figures.records_per_second / baseline
            print(f"{batch_size:>10} | {name:>10} | {result.figures.records_per_second:>10,.0f} | "
                  f"{result.figures.megabytes_per_second:>6.1f} | {result.percentile(0.5):>7.1f} | "
                  f"{result.percentile(0.99):>7.1f} | {f'{ratio:.2f}' if name != 'librdkafka' else ''}")


if __name__ == "__main__":
    main()
