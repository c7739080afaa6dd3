"""Transactional produce throughput of Gregor beside idempotent produce, in the same run.

    .venv/bin/python benchmarks/transactions.py                    # 20,000 records of 100 bytes
    .venv/bin/python benchmarks/transactions.py --records 100000 --size 512

The script starts its own `gregor server` (fresh data directory, embedded defaults) and drives it
with librdkafka (confluent-kafka) in this process: first an idempotent producer
(`enable.idempotence=true`, acks=all) sends `--records` records to a new topic, then a
transactional producer sends the same number in transactions of 100 and of 1,000 records
(begin, produce, commit_transaction, which waits for every record and the commit's markers), then
the idempotent run again (the two idempotent rows show how much the figures drift within a run;
an untimed warm-up goes first). Each run has a new topic and producer, made and used for one
record (one transaction) before its timing starts, so that producer ids and metadata are not
timed. It
prints records/s, MB/s and, for the transactional rows, commits/s and the mean commit time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from throughput import start_gregor  # noqa: E402


def new_topic(bootstrap: str, partitions: int) -> str:
    name = f"txn-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    return name


def idempotent(bootstrap: str, records: int, payload: bytes, partitions: int) -> float:
    topic = new_topic(bootstrap, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    producer.produce(topic, payload)  # the producer id and the topic's metadata, before the timing
    producer.flush(30)
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    return time.perf_counter() - started


def transactional(bootstrap: str, records: int, payload: bytes, partitions: int,
                  per_txn: int) -> tuple[float, list[float]]:
    topic = new_topic(bootstrap, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "linger.ms": 5})
    producer.init_transactions(60)
    producer.begin_transaction()  # the topic's metadata and a first commit, before the timing
    producer.produce(topic, payload)
    producer.commit_transaction(60)
    commits: list[float] = []
    started = time.perf_counter()
    sent = 0
    while sent < records:
        producer.begin_transaction()
        for _ in range(min(per_txn, records - sent)):
            while True:
                try:
                    producer.produce(topic, payload)
                    break
                except BufferError:
                    producer.poll(0.01)
            sent += 1
        commit_started = time.perf_counter()
        producer.commit_transaction(60)
        commits.append(time.perf_counter() - commit_started)
    return time.perf_counter() - started, commits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100, help="payload bytes per record")
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args()
    payload = os.urandom(args.size)
    broker = start_gregor()
    try:
        idempotent(broker.bootstrap, min(args.records, 5000), payload, args.partitions)  # warm-up, not shown
        rows = []
        for per_txn in (None, 100, 1000, None):
            if per_txn is None:
                rows.append(("idempotent, no transactions",
                             idempotent(broker.bootstrap, args.records, payload, args.partitions), None))
            else:
                seconds, commits = transactional(broker.bootstrap, args.records, payload, args.partitions, per_txn)
                rows.append((f"transactions of {per_txn}", seconds, commits))
        print(f"{args.records} records of {args.size} bytes, {args.partitions} partitions, one gregor server")
        print(f"{'mode':<30} {'records/s':>10} {'MB/s':>7} {'commits/s':>10} {'mean commit ms':>15}")
        for name, seconds, commits in rows:
            rate = args.records / seconds
            extra = (f"{len(commits) / seconds:>10.1f} {1000 * sum(commits) / len(commits):>15.1f}" if commits
                     else f"{'':>10} {'':>15}")
            print(f"{name:<30} {rate:>10.0f} {rate * args.size / 1e6:>7.2f} {extra}")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
