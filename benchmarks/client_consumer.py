"""Gregor's Python consumer beside confluent-kafka's (librdkafka) on the same Gregor broker.

    .venv/bin/python benchmarks/client_consumer.py
    .venv/bin/python benchmarks/client_consumer.py --records 500000 --size 100

The script starts its own `gregor server` (fresh data directory), loads `--records` records of
`--size` bytes into a one-partition topic with librdkafka's producer, then reads them all from
the beginning with each consumer in turn (assigned partition, no group, default fetch sizes;
librdkafka with fetch.queue.backoff.ms=20, as benchmarks/throughput.py explains): Gregor's sync
`poll` ("gregor"), the asyncio consumer's `getmany` ("gregor-aio") and `async for`
("aio-iter"), and librdkafka. It prints records/s and MB/s per client and
the ratio to librdkafka. `--rounds N` reads the topic N times with each client in turn and
reports each client's median run, so that a load changing on a shared machine weighs on all of
them alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid

from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentPartition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from throughput import Figures, create_topic, produce, progress, start_gregor  # noqa: E402

from gregor.aio import Consumer as AioConsumer  # noqa: E402
from gregor.client.consumer import Consumer  # noqa: E402


def gregor_consumer(bootstrap: str, topic: str, records: int, size: int) -> Figures:
    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    consumer.assign([(topic, 0)])
    seen = 0
    started = time.perf_counter()
    while seen < records:
        batch = consumer.poll(1.0)
        for _ in batch:
            seen += 1
        if seen % 100_000 < len(batch):
            progress("gregor", seen, records, started)
    elapsed = time.perf_counter() - started
    consumer.close()
    return Figures(seen, elapsed, seen * size)


def gregor_aio_consumer(bootstrap: str, topic: str, records: int, size: int) -> Figures:
    async def run() -> float:
        async with AioConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as consumer:
            consumer.assign([(topic, 0)])
            seen = 0
            started = time.perf_counter()
            while seen < records:
                batches = await consumer.getmany(timeout_ms=1000)
                for batch in batches.values():
                    for _ in batch:
                        seen += 1
                    if seen % 100_000 < len(batch):
                        progress("gregor-aio", seen, records, started)
            return time.perf_counter() - started

    elapsed = asyncio.run(run())
    return Figures(records, elapsed, records * size)


def aio_iteration_consumer(bootstrap: str, topic: str, records: int, size: int) -> Figures:
    async def run() -> float:
        async with AioConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as consumer:
            consumer.assign([(topic, 0)])
            seen = 0
            started = time.perf_counter()
            async for _ in consumer:
                seen += 1
                if seen % 100_000 == 0:
                    progress("aio-iter", seen, records, started)
                if seen == records:
                    break
            return time.perf_counter() - started

    elapsed = asyncio.run(run())
    return Figures(records, elapsed, records * size)


def librdkafka_consumer(bootstrap: str, topic: str, records: int, size: int) -> Figures:
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 20})
    consumer.assign([ConfluentPartition(topic, 0, 0)])
    seen = 0
    started = time.perf_counter()
    while seen < records:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                seen += 1
        if seen % 100_000 < 10_000:
            progress("librdkafka", seen, records, started)
    elapsed = time.perf_counter() - started
    consumer.close()
    return Figures(seen, elapsed, seen * size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1, help="runs per client, in turn; the median is reported")
    args = parser.parse_args()
    broker = start_gregor()
    try:
        topic = f"bench-consume-{uuid.uuid4().hex[:6]}"
        create_topic(broker.bootstrap, topic, 1)
        produce(broker.bootstrap, topic, args.records, args.size, {"acks": "1"})
        runs: dict[str, list[Figures]] = {}
        for _ in range(max(args.rounds, 1)):
            for name, run in (("gregor", gregor_consumer), ("gregor-aio", gregor_aio_consumer),
                              ("aio-iter", aio_iteration_consumer), ("librdkafka", librdkafka_consumer)):
                result = run(broker.bootstrap, topic, args.records, args.size)
                runs.setdefault(name, []).append(result)
                print(f"\n{name:>10}: {result.records_per_second:12,.0f} records/s "
                      f"{result.megabytes_per_second:8.1f} MB/s", file=sys.stderr)
        figures = {name: sorted(results, key=lambda item: item.records_per_second)[(len(results) - 1) // 2]
                   for name, results in runs.items()}
    finally:
        broker.stop()
    theirs = figures["librdkafka"]
    print(f"\nconsumer, {args.records:,} records of {args.size} B, one partition, from the beginning"
          + (f"; median of {args.rounds} rounds" if args.rounds > 1 else ""))
    print(f"{'client':>10} | {'records/s':>10} | {'MB/s':>6} | ratio")
    for name, ours in figures.items():
        ratio = f"{ours.records_per_second / theirs.records_per_second:.2f}" if name != "librdkafka" else ""
        print(f"{name:>10} | {ours.records_per_second:>10,.0f} | {ours.megabytes_per_second:>6.1f} | {ratio}")

if __name__ == "__main__":
    main()
