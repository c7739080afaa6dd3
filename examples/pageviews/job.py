"""The Structured Streaming job: parse page views, set invalid ones aside, count per page and
one-minute event-time window, write closed windows to a Gregor topic and to Parquet.

Three queries share the parsed stream, each with its own checkpoint:

- `parquet`: closed windows to Parquet (append mode). Spark's file sink records each micro-batch
  in `_spark_metadata`, so after a crash and restart every window is in the table exactly once
  for readers that go through that log (`spark.read.parquet`).
- `topic`: the same windows to a Gregor topic, key `<window start ms>|<page>`, value JSON, with
  the exactly-once sink (`deliveryGuarantee=exactly-once`): each micro-batch is one transaction
  per task, committed by the driver, so after a crash and restart a read_committed consumer finds
  every window once.
- `dead-letters`: records that are not valid events (not JSON, or without page, user or time) to a
  dead-letter topic, keyed by where they came from (`topic-partition@offset`), never dropped;
  exactly once as well.

The watermark delay (`WATERMARK`) must exceed how late events arrive (events.MAX_LATENESS_MS):
later events would be left out of windows already closed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

WATERMARK = "1 minute"
WINDOW = "1 minute"
EVENT_SCHEMA = "page string, user string, ts long, referrer string, session string"


@dataclass(frozen=True)
class Demo:
    """Where the demo's data lives: the broker, its three topics and a working directory."""

    bootstrap: str
    work_dir: str
    views_topic: str = "page-views"
    results_topic: str = "page-views-per-minute"
    dead_letter_topic: str = "page-views-dead-letters"

    @property
    def parquet_dir(self) -> str:
        return os.path.join(self.work_dir, "page-views-per-minute.parquet")

    def checkpoint(self, query: str) -> str:
        return os.path.join(self.work_dir, "checkpoints", query)


def session(local_dir: str) -> SparkSession:
    """A local[2] session with the gregor format registered, UTC timestamps, loopback only."""
    import gregor.spark

    spark = (SparkSession.builder.master("local[2]").appName("gregor-pageviews")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.local.dir", local_dir)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    gregor.spark.register(spark)
    return spark


def _is_event() -> Column:
    return F.col("event.page").isNotNull() & F.col("event.user").isNotNull() & F.col("event.ts").isNotNull()


def parsed_views(spark: SparkSession, demo: Demo, max_offsets_per_trigger: int | None) -> DataFrame:
    """The page-view topic with each value parsed against EVENT_SCHEMA (null fields when invalid)."""
    reader = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", demo.bootstrap)
              .option("subscribe", demo.views_topic).option("startingOffsets", "earliest"))
    if max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets_per_trigger)
    return reader.load().select("topic", "partition", "offset", "value",
                                F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("event"))


def windowed_counts(views: DataFrame) -> DataFrame:
    """Views and unique users per page and window, emitted once the watermark closes the window
    (streaming aggregations cannot count distinct, hence the size of the set of users)."""
    return (views.where(_is_event())
            .select("event.page", "event.user", F.timestamp_millis("event.ts").alias("time"))
            .withWatermark("time", WATERMARK)
            .groupBy(F.window("time", WINDOW), "page")
            .agg(F.count("*").alias("views"), F.size(F.collect_set("user")).alias("users"))
            .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "page", "views", "users"))


def exactly_once(writer: DataStreamWriter, prefix: str) -> DataStreamWriter:
    """The sink's exactly-once mode; `prefix` names the tasks' transactional ids (one per query)."""
    return writer.option("deliveryGuarantee", "exactly-once").option("transactionalIdPrefix", prefix)


def start(spark: SparkSession, demo: Demo, *, available_now: bool = True,
          max_offsets_per_trigger: int | None = None) -> list[StreamingQuery]:
    """Start the three queries; with `available_now` they stop once everything in the topic is done."""
    views = parsed_views(spark, demo, max_offsets_per_trigger)
    counts = windowed_counts(views)
    dead_letters = views.where(~_is_event()).select(
        F.format_string("%s-%d@%d", "topic", "partition", "offset").alias("key"), "value")
    as_records = counts.select(
        F.format_string("%d|%s", F.unix_millis("window_start"), "page").alias("key"),
        F.to_json(F.struct(F.unix_millis("window_start").alias("window_start"), "page", "views", "users"))
        .alias("value"))

    def trigger(writer):
        return writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="5 seconds")

    return [
        trigger(counts.writeStream.queryName("parquet").format("parquet").outputMode("append")
                .option("path", demo.parquet_dir).option("checkpointLocation", demo.checkpoint("parquet"))).start(),
        trigger(exactly_once(as_records.writeStream.queryName("topic").format("gregor").outputMode("append")
                             .option("kafka.bootstrap.servers", demo.bootstrap).option("topic", demo.results_topic)
                             .option("checkpointLocation", demo.checkpoint("topic")), "pageviews-per-minute")).start(),
        trigger(exactly_once(dead_letters.writeStream.queryName("dead-letters").format("gregor").outputMode("append")
                             .option("kafka.bootstrap.servers", demo.bootstrap).option("topic", demo.dead_letter_topic)
                             .option("checkpointLocation", demo.checkpoint("dead-letters")), "pageviews-dead-letters"))
        .start(),
    ]


def run(spark: SparkSession, demo: Demo, *, available_now: bool = True,
        max_offsets_per_trigger: int | None = None) -> None:
    """Start the queries and wait for all of them; the first failure is raised."""
    queries = start(spark, demo, available_now=available_now, max_offsets_per_trigger=max_offsets_per_trigger)
    try:
        for query in queries:
            query.awaitTermination()
    finally:
        for query in queries:
            query.stop()
