"""Showing what the job produced: the Parquet table (read through Spark, which honours the file
sink's `_spark_metadata` log, so a crash never shows a window twice), and what the result and
dead-letter topics hold for a read_committed consumer (the sink writes them in transactions, so
that is each window, and each invalid record, once)."""

from __future__ import annotations

from gregor.client import Consumer, TopicPartition
from pyspark.sql import SparkSession

from examples.pageviews.job import Demo


def committed_records(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every committed record of `topic`, read with read_committed up to the last
    stable offset of each partition (offsets also count transaction markers and aborted records)."""
    found: list[tuple[bytes | None, bytes | None]] = []
    with Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                   "isolation.level": "read_committed"}) as consumer:
        partitions = [TopicPartition(topic, meta.partition) for meta in consumer.partitions_for(topic)]
        consumer.assign(partitions)
        end = consumer.end_offsets(partitions)
        for _ in range(200):
            if all(consumer.position(tp) >= end[tp] for tp in partitions):
                break
            found += [(record.key, record.value) for record in consumer.poll(0.5)]
    return found


def show(spark: SparkSession, demo: Demo) -> str:
    """The report `python -m examples.pageviews show` prints."""
    table = spark.read.parquet(demo.parquet_dir).orderBy("window_start", "page").collect()
    lines = [f"{'window (UTC)':<17} {'page':<12} {'views':>5} {'users':>5}"]
    lines += [f"{row.window_start:%Y-%m-%d %H:%M}  {row.page:<12} {row.views:>5} {row.users:>5}" for row in table]
    results = committed_records(demo.bootstrap, demo.results_topic)
    repeated = len(results) - len({key for key, _ in results})
    lines.append(f"{len(table)} closed windows in {demo.parquet_dir}; {len(results)} records in topic "
                 f"{demo.results_topic} (read_committed), "
                 + ("each window once" if not repeated else f"{repeated} windows more than once"))
    bad = committed_records(demo.bootstrap, demo.dead_letter_topic)
    lines.append(f"{len(bad)} invalid records set aside in topic {demo.dead_letter_topic}:")
    lines += [f"  {key.decode()}: {value!r}" for key, value in bad]
    return "\n".join(lines)
