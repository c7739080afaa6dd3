"""spark.read.format("gregor"): exactly the produced records, every column, for each way of
choosing the start and the end."""

from __future__ import annotations

import datetime
import json

import pytest

from tests.spark.conftest import produce

BASE_MS = 1_700_000_000_000


def rows_of(frame) -> list[dict]:
    return sorted((row.asDict(recursive=True) for row in frame.collect()),
                  key=lambda row: (row["topic"], row["partition"], row["offset"]))


def expected(records: list[dict], headers: bool = False) -> list[dict]:
    rows = []
    for record in records:
        row = {"key": record.get("key"), "value": record.get("value"), "topic": record["topic"],
               "partition": record["partition"], "offset": record["offset"],
               "timestamp": datetime.datetime.fromtimestamp(record["timestamp"] / 1000, datetime.timezone.utc)
               .replace(tzinfo=None), "timestampType": 0}
        if headers:
            row["headers"] = [{"key": key, "value": value} for key, value in record.get("headers") or []]
        rows.append(row)
    return sorted(rows, key=lambda row: (row["topic"], row["partition"], row["offset"]))


@pytest.fixture
def three_partitions(new_topic, producer):
    """12 records over 3 partitions with distinct timestamps, keys, nulls and headers."""
    topic = new_topic(3)
    records = [{"value": None if i == 5 else f"value-{i}".encode(), "key": None if i % 4 == 0 else f"k{i}".encode(),
                "partition": i % 3, "timestamp": BASE_MS + i * 1000,
                "headers": [("h", f"{i}".encode()), ("empty", None)] if i % 2 else []}
               for i in range(12)]
    return topic, produce(producer, topic, records)


def read(spark, broker, topic, **options):
    reader = spark.read.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def test_everything_by_default_with_every_column(spark, broker, three_partitions):
    topic, records = three_partitions
    frame = read(spark, broker, topic, includeHeaders="true")
    assert [field.name for field in frame.schema.fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    assert rows_of(frame) == expected(records, headers=True)
    assert frame.rdd.getNumPartitions() == 3


def test_schema_without_headers_is_sparks_kafka_schema(spark, broker, three_partitions):
    topic, records = three_partitions
    frame = read(spark, broker, topic)
    assert frame.schema.simpleString() == ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
                                           "timestamp:timestamp,timestampType:int>")
    assert rows_of(frame) == expected(records)


def test_json_starting_and_ending_offsets(spark, broker, three_partitions):
    topic, records = three_partitions
    starting = json.dumps({topic: {"0": 1, "1": -2, "2": 3}})
    ending = json.dumps({topic: {"0": 3, "1": -1, "2": 4}})
    frame = read(spark, broker, topic, startingOffsets=starting, endingOffsets=ending)
    wanted = [r for r in records if (r["partition"] == 0 and 1 <= r["offset"] < 3) or r["partition"] == 1
              or (r["partition"] == 2 and r["offset"] == 3)]
    assert rows_of(frame) == expected(wanted)


def test_timestamps(spark, broker, three_partitions):
    topic, records = three_partitions
    frame = read(spark, broker, topic, startingTimestamp=str(BASE_MS + 3000), endingTimestamp=str(BASE_MS + 9000))
    assert rows_of(frame) == expected([r for r in records if BASE_MS + 3000 <= r["timestamp"] < BASE_MS + 9000])
    by_partition = json.dumps({topic: {"0": BASE_MS + 6000, "1": BASE_MS, "2": BASE_MS + 999_999}})
    frame = read(spark, broker, topic, startingOffsetsByTimestamp=by_partition,
                 startingOffsetsByTimestampStrategy="latest")
    assert rows_of(frame) == expected([r for r in records if (r["partition"] == 0 and r["timestamp"] >= BASE_MS + 6000)
                                       or r["partition"] == 1])


def test_assign_and_pattern(spark, broker, three_partitions):
    topic, records = three_partitions
    frame = (spark.read.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("assign", json.dumps({topic: [2]})).load())
    assert rows_of(frame) == expected([r for r in records if r["partition"] == 2])
    frame = (spark.read.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribePattern", topic.replace("-", ".")).load())
    assert rows_of(frame) == expected(records)


def test_an_empty_range_reads_nothing(spark, broker, new_topic):
    topic = new_topic(2)
    assert read(spark, broker, topic).collect() == []


@pytest.mark.parametrize(("options", "message"), [
    ({"assign": '{"t": [0]}'}, "option 'subscribe': give exactly one of subscribe, subscribePattern and assign"),
    ({"startingOffsets": "{oops"}, "option 'startingOffsets': expected earliest, latest or JSON"),
    ({"subscribe": "no-such-topic"}, r"option 'subscribe': unknown topic\(s\) no-such-topic"),
])
def test_bad_options_fail_the_read_naming_the_option(spark, broker, three_partitions, options, message):
    topic, _ = three_partitions
    with pytest.raises(Exception, match=message):
        read(spark, broker, topic, **options).collect()
