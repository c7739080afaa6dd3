"""Rows/s of a batch read through the `gregor` Spark source into Spark's `noop` sink.

    .venv/bin/python benchmarks/spark_read.py
    .venv/bin/python benchmarks/spark_read.py --records 1000000 --size 100 --partitions 2 --runs 3

The script starts its own `gregor server`, loads `--records` records of `--size` bytes into a
topic of `--partitions` partitions with librdkafka's producer, starts a local[2] Spark session
(warmed by one read that is not counted) and times `--runs` full reads of the topic
(`spark.read.format("gregor") ... .write.format("noop")`), printing rows/s for each run and the
best. The figure includes task scheduling and the executors' consumer start-up, as a job sees it.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from spark_common import local_spark, parse_args  # noqa: E402
from throughput import create_topic, produce, start_gregor  # noqa: E402


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])

    broker = start_gregor()
    try:
        topic = f"spark-read-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap, topic, args.partitions)
        produce(broker.bootstrap, topic, args.records, args.size, {"linger.ms": "20"})
        spark = local_spark()
        frame = (spark.read.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
                 .option("subscribe", topic).load())
        assert frame.count() == args.records, "the warm-up read did not return every record"
        rates = []
        for run in range(args.runs):
            started = time.perf_counter()
            frame.write.format("noop").mode("overwrite").save()
            elapsed = time.perf_counter() - started
            rates.append(args.records / elapsed)
            print(f"run {run + 1}: {args.records} rows of {args.size} B in {elapsed:.2f} s = "
                  f"{rates[-1]:,.0f} rows/s")
        print(f"best: {max(rates):,.0f} rows/s ({args.partitions} partitions, local[2])")
        spark.stop()
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
