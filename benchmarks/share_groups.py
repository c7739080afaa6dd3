"""Share-group consumption (KIP-932) with confluent-kafka's ShareConsumer, beside a classic group.

    PYTHONPATH=src .venv/bin/python benchmarks/share_groups.py
    PYTHONPATH=src .venv/bin/python benchmarks/share_groups.py --records 200000 --size 100 --consumers 1,3,6

The script starts its own `gregor server` (share.auto.offset.reset=earliest), loads `--records`
records of `--size` bytes into a two-partition topic, then reads them all with a classic
consumer group of one member (librdkafka's Consumer), and with a share group of each size in
`--consumers` (one ShareConsumer per thread, implicit acknowledgement: each poll accepts the
records of the one before). It prints records/s for each, the records delivered more than once
(a share group's redeliveries: delivery count above 1; librdkafka releases the records it
fetched for a partition it is no longer assigned, so joins cause some) and how many records each
member got.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, ShareConsumer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from throughput import create_topic, produce, start_gregor  # noqa: E402

TIMEOUT_S = 300


def classic(bootstrap: str, topic: str, records: int) -> tuple[float, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"classic-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "fetch.queue.backoff.ms": 20})
    consumer.subscribe([topic])
    seen = 0
    started = None
    deadline = time.monotonic() + TIMEOUT_S
    while seen < records and time.monotonic() < deadline:
        batch = consumer.consume(1000, 0.5)
        if batch and started is None:
            started = time.perf_counter()
        seen += sum(1 for message in batch if message.error() is None)
    elapsed = time.perf_counter() - (started or time.perf_counter())
    consumer.close()
    return elapsed, seen


def share(bootstrap: str, topic: str, records: int, members: int) -> tuple[float, int, int, list[int]]:
    """(seconds from the first record to the last, distinct records, redeliveries, records per member)."""
    group = f"share-{members}-{uuid.uuid4().hex[:6]}"
    seen: set[tuple[int, int]] = set()
    redelivered = [0]
    per_member = [0] * members
    lock = threading.Lock()
    done = threading.Event()
    first = [0.0]
    last = [0.0]

    def member(index: int) -> None:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        consumer.subscribe([topic])
        try:
            while not done.is_set():
                batch = [m for m in consumer.poll(0.2) if m.error() is None]
                if not batch:
                    continue
                with lock:
                    now = time.perf_counter()
                    first[0] = first[0] or now
                    per_member[index] += len(batch)
                    for message in batch:
                        if message.delivery_count() > 1:
                            redelivered[0] += 1
                        seen.add((message.partition(), message.offset()))
                    if len(seen) >= records:
                        last[0] = now
                        done.set()
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(members)]
    for thread in threads:
        thread.start()
    done.wait(TIMEOUT_S)
    done.set()
    for thread in threads:
        thread.join(30)
    return (last[0] or time.perf_counter()) - first[0], len(seen), redelivered[0], per_member


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--consumers", default="1,3,6", help="share group sizes, comma-separated")
    args = parser.parse_args()
    broker = start_gregor(overrides={"share.auto.offset.reset": "earliest"})
    try:
        topic = f"share-bench-{uuid.uuid4().hex[:6]}"
        create_topic(broker.bootstrap, topic, 2)
        produce(broker.bootstrap, topic, args.records, args.size, {"linger.ms": "5"})
        print(f"{args.records:,} records of {args.size} B on 2 partitions")
        print(f"{'consumer':<22} {'records/s':>12} {'records':>10} {'redelivered':>12}  per member")
        seconds, got = classic(broker.bootstrap, topic, args.records)
        print(f"{'classic group, 1':<22} {got / seconds:>12,.0f} {got:>10,} {'-':>12}  -")
        for members in (int(n) for n in args.consumers.split(",")):
            seconds, got, again, per_member = share(broker.bootstrap, topic, args.records, members)
            print(f"{f'share group, {members}':<22} {got / max(seconds, 1e-9):>12,.0f} {got:>10,} {again:>12,}  "
                  f"{per_member}")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
