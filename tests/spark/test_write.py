"""df.write / df.writeStream .format("gregor"), read back with confluent-kafka as the oracle."""

from __future__ import annotations

import confluent_kafka
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType, BinaryType, IntegerType, StringType, StructField, StructType,
)

from gregor.spark.options import SinkOptions
from gregor.spark.stream_writer import StreamWriter
from gregor.spark.writer import TaskIdentity, WriteReport
from tests.spark.conftest import produce

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def consume_all(broker, topic: str, expected: int, isolation: str = "read_uncommitted") -> list[dict]:
    """Every record of `topic` via librdkafka (assigned partitions, no group): waits until
    `expected` arrived, then drains the rest."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"oracle-{topic}",
                                         "enable.auto.commit": False, "isolation.level": isolation})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in partitions])
    found = []
    try:
        for _ in range(200):
            messages = consumer.consume(500, 0.5)
            for message in messages:
                assert message.error() is None, message.error()
                found.append({"key": message.key(), "value": message.value(), "partition": message.partition(),
                              "offset": message.offset(), "headers": message.headers() or []})
            if len(found) >= expected and not messages:
                break
    finally:
        consumer.close()
    return sorted(found, key=lambda record: (record["partition"], record["offset"]))


def test_batch_write_with_topic_column_keys_partitions_and_headers(spark, broker, new_topic):
    topic = new_topic(3)
    rows = [(f"v{i}", f"k{i}".encode() if i % 2 else None, topic, i % 3,
             [(f"h{i}", f"x{i}".encode()), ("n", None)] if i % 3 == 0 else None) for i in range(9)]
    schema = StructType([StructField("value", StringType()), StructField("key", BinaryType()),
                         StructField("topic", StringType()), StructField("partition", IntegerType()),
                         StructField("headers", HEADERS)])
    spark.createDataFrame(rows, schema).write.format("gregor").mode("append") \
        .option("kafka.bootstrap.servers", broker.bootstrap).save()
    found = consume_all(broker, topic, 9)
    assert sorted((r["partition"], r["value"], r["key"], tuple(r["headers"])) for r in found) == sorted(
        (i % 3, f"v{i}".encode(), f"k{i}".encode() if i % 2 else None,
         ((f"h{i}", f"x{i}".encode()), ("n", None)) if i % 3 == 0 else ()) for i in range(9))
    for partition in range(3):
        assert [r["offset"] for r in found if r["partition"] == partition] == [0, 1, 2]


def test_the_topic_option_wins_over_the_column(spark, broker, new_topic):
    wanted, ignored = new_topic(1), new_topic(1)
    frame = spark.createDataFrame([(ignored, "a", "ka"), (None, "b", "kb")], "topic string, value string, key string")
    frame.write.format("gregor").mode("append").option("kafka.bootstrap.servers", broker.bootstrap) \
        .option("topic", wanted).save()
    found = consume_all(broker, wanted, 2)
    assert sorted((r["key"], r["value"]) for r in found) == [(b"ka", b"a"), (b"kb", b"b")]


def test_bad_sink_input_is_refused_before_writing(spark, broker):
    frame = spark.createDataFrame([("a",)], "payload string")
    with pytest.raises(Exception, match="needs a value column"):
        frame.write.format("gregor").mode("append").option("kafka.bootstrap.servers", broker.bootstrap) \
            .option("topic", "t").save()
    with pytest.raises(Exception, match="set the topic option or give the DataFrame a topic column"):
        frame.withColumnRenamed("payload", "value").write.format("gregor").mode("append") \
            .option("kafka.bootstrap.servers", broker.bootstrap).save()
    with pytest.raises(Exception, match="cannot be overwritten"):
        frame.withColumnRenamed("payload", "value").write.format("gregor").mode("overwrite") \
            .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "t").save()


def test_streaming_write_from_a_topic(spark, broker, new_topic, producer, tmp_path):
    source, target = new_topic(2), new_topic(2)
    produce(producer, source, [{"value": f"s{i}".encode(), "key": f"k{i}".encode(), "partition": i % 2,
                                "headers": [("n", str(i).encode())]} for i in range(10)])
    query = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest").option("includeHeaders", "true")
             .option("maxOffsetsPerTrigger", "6").load()
             .select("key", F.upper(F.col("value").cast("string")).alias("value"), "partition", "headers")
             .writeStream.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("topic", target).option("checkpointLocation", str(tmp_path)).trigger(availableNow=True).start())
    query.awaitTermination(120)
    found = consume_all(broker, target, 10)
    assert sorted((r["partition"], r["key"], r["value"], tuple(r["headers"])) for r in found) == sorted(
        (i % 2, f"k{i}".encode(), f"S{i}".encode(), (("n", str(i).encode()),)) for i in range(10))


def test_commit_again_and_abort_after_commit_are_harmless():
    writer = StreamWriter(SinkOptions({"bootstrap.servers": "127.0.0.1:1"}, "t"))
    report = WriteReport(TaskIdentity(0, 0, "query", 3), 2, {"t-0": (5, 6)})
    writer.commit([report, None], 3)
    writer.commit([report, None], 3)
    writer.abort([report], 3)


def test_a_broker_that_is_down_fails_the_query_at_start(spark, tmp_path):
    from tests.broker_process import free_port

    frame = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", f"127.0.0.1:{free_port()}")
             .option("kafka.default.api.timeout.ms", "2000").option("subscribe", "t").load())
    query = frame.writeStream.format("noop").option("checkpointLocation", str(tmp_path)).start()
    with pytest.raises(StreamingQueryException, match="_ALL_BROKERS_DOWN|_TIMED_OUT|_TRANSPORT"):
        query.awaitTermination(60)


@pytest.mark.slow
def test_a_crash_before_the_commit_log_duplicates_only_the_rerun_batch(spark, broker, new_topic, producer, tmp_path):
    """Deleting the newest commit-log entry leaves the checkpoint as a crash between the sink's
    write and Spark's commit would: the restart re-runs that micro-batch, at-least-once."""
    source, target = new_topic(1), new_topic(1)
    produce(producer, source, [{"value": f"r{i}".encode(), "partition": 0} for i in range(9)])

    def run() -> None:
        query = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
                 .option("subscribe", source).option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", "4").load().select("value")
                 .writeStream.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
                 .option("topic", target).option("checkpointLocation", str(tmp_path)).trigger(availableNow=True)
                 .start())
        query.awaitTermination(120)
        assert query.exception() is None

    run()
    assert sorted(r["value"] for r in consume_all(broker, target, 9)) == sorted(f"r{i}".encode() for i in range(9))
    for entry in ("2", ".2.crc"):
        (tmp_path / "commits" / entry).unlink(missing_ok=True)
    run()
    found = sorted(r["value"] for r in consume_all(broker, target, 10))
    assert found == sorted([f"r{i}".encode() for i in range(9)] + [b"r8"])
