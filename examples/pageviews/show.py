"""Showing what the job produced: the Parquet table (read through Spark, which honours the file
sink's `_spark_metadata` log, so a crash never shows a window twice), and how many records the
result and dead-letter topics hold."""

from __future__ import annotations

from gregor.client import Consumer, TopicPartition
from pyspark.sql import SparkSession

from examples.pageviews.job import Demo


def topic_size(bootstrap: str, topic: str) -> int:
    """Records in `topic` (end minus start offsets over its partitions)."""
    with Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False}) as consumer:
        partitions = [TopicPartition(topic, meta.partition) for meta in consumer.partitions_for(topic)]
        start, end = consumer.beginning_offsets(partitions), consumer.end_offsets(partitions)
        return sum(end[tp] - start[tp] for tp in partitions)


def dead_letters(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record in the dead-letter topic."""
    total = topic_size(bootstrap, topic)
    found: list[tuple[bytes | None, bytes | None]] = []
    with Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False,
                   "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(topic, meta.partition) for meta in consumer.partitions_for(topic)])
        for _ in range(100):
            if len(found) >= total:
                break
            found += [(record.key, record.value) for record in consumer.poll(0.5)]
    return found


def show(spark: SparkSession, demo: Demo) -> str:
    """The report `python -m examples.pageviews show` prints."""
    table = spark.read.parquet(demo.parquet_dir).orderBy("window_start", "page").collect()
    lines = [f"{'window (UTC)':<17} {'page':<12} {'views':>5} {'users':>5}"]
    lines += [f"{row.window_start:%Y-%m-%d %H:%M}  {row.page:<12} {row.views:>5} {row.users:>5}" for row in table]
    lines.append(f"{len(table)} closed windows in {demo.parquet_dir}; "
                 f"{topic_size(demo.bootstrap, demo.results_topic)} records in topic {demo.results_topic}")
    bad = dead_letters(demo.bootstrap, demo.dead_letter_topic)
    lines.append(f"{len(bad)} invalid records set aside in topic {demo.dead_letter_topic}:")
    lines += [f"  {key.decode()}: {value!r}" for key, value in bad]
    return "\n".join(lines)
