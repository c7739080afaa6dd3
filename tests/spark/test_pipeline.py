"""End to end: page-view events (JSON) in a topic -> a streaming job that parses them, sets bad
records aside, counts views and unique users per page and event-time minute with a watermark
(append mode: each closed window once) -> a result topic, checked against counts computed here
from the generated events."""

from __future__ import annotations

import collections
import json
import random

import pytest
from pyspark.sql import functions as F

from tests.spark.conftest import produce
from tests.spark.test_write import consume_all

MINUTE_MS = 60_000
BASE_MS = 1_700_000_040_000 - 1_700_000_040_000 % MINUTE_MS


def events(seed: int, count: int) -> list[dict]:
    chooser = random.Random(seed)
    return [{"page": chooser.choice(["/", "/pricing", "/docs"]), "user": f"u{chooser.randrange(5)}",
             "ts": BASE_MS + chooser.randrange(3 * MINUTE_MS)} for _ in range(count)]


@pytest.mark.slow
def test_page_views_per_minute(spark, broker, new_topic, producer, tmp_path):
    views, results = new_topic(2), new_topic(1)
    generated = events(7, 40)
    closing = {"page": "/", "user": "tick", "ts": BASE_MS + 10 * MINUTE_MS}  # moves the watermark past the rest
    produce(producer, views, [{"value": json.dumps(event).encode(), "key": event["user"].encode()}
                              for event in generated] + [{"value": b"{not json", "key": b"bad"},
                                                         {"value": json.dumps(closing).encode()}])

    schema = "page string, user string, ts long"
    parsed = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", views).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "15")
              .load()
              .select(F.from_json(F.col("value").cast("string"), schema).alias("event"), "value"))
    bad = parsed.where(F.col("event.page").isNull())
    counts = (parsed.where(F.col("event.page").isNotNull())
              .select("event.page", "event.user", (F.col("event.ts") / 1000).cast("timestamp").alias("time"))
              .withWatermark("time", "5 minutes")
              .groupBy(F.window("time", "1 minute"), "page")
              .agg(F.count("*").alias("views"), F.size(F.collect_set("user")).alias("users"))
              .select(F.concat_ws("|", F.col("window.start").cast("long"), "page").alias("key"),
                      F.to_json(F.struct("views", "users")).alias("value")))
    counting = (counts.writeStream.format("gregor").outputMode("append")
                .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", results)
                .option("checkpointLocation", str(tmp_path / "counts")).trigger(availableNow=True).start())
    set_aside = (bad.writeStream.format("memory").queryName("bad_page_views")
                 .option("checkpointLocation", str(tmp_path / "bad")).trigger(availableNow=True).start())
    counting.awaitTermination(120)
    set_aside.awaitTermination(120)

    expected: dict[str, dict] = collections.defaultdict(lambda: {"views": 0, "users": set()})
    for event in generated:
        key = f"{(event['ts'] - event['ts'] % MINUTE_MS) // 1000}|{event['page']}"
        expected[key]["views"] += 1
        expected[key]["users"].add(event["user"])
    found = consume_all(broker, results, len(expected))
    assert sorted((record["key"].decode(), json.loads(record["value"])) for record in found) == sorted(
        (key, {"views": value["views"], "users": len(value["users"])}) for key, value in expected.items())
    assert [row.value for row in spark.table("bad_page_views").collect()] == [b"{not json"]
