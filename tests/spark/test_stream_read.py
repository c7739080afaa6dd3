"""spark.readStream.format("gregor"): micro-batch sizes under maxOffsetsPerTrigger, the offsets in
the checkpoint, restarts that neither lose nor repeat, new partitions, and data loss."""

from __future__ import annotations

import json
import pathlib

import pytest
from pyspark.errors import StreamingQueryException

from tests.spark.conftest import produce


class Batches:
    """A foreachBatch sink that keeps each micro-batch's (partition, offset, value) rows."""

    def __init__(self, fail_on_batch: int | None = None) -> None:
        self.batches: dict[int, list[tuple[int, int, bytes]]] = {}
        self.fail_on_batch = fail_on_batch

    def __call__(self, frame, batch_id: int) -> None:
        rows = sorted((row.partition, row.offset, row.value) for row in frame.collect())
        if batch_id == self.fail_on_batch:
            self.fail_on_batch = None
            raise RuntimeError(f"crash in micro-batch {batch_id}")
        self.batches[batch_id] = rows

    def sizes(self) -> list[int]:
        return [len(self.batches[batch]) for batch in sorted(self.batches)]

    def rows(self) -> list[tuple[int, int, bytes]]:
        return sorted(row for batch in self.batches.values() for row in batch)


def run_available_now(spark, broker, topic, checkpoint, sink, **options):
    reader = (spark.readStream.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
    except StreamingQueryException:
        pass  # the test looks at query.exception()
    return query


def checkpointed_offsets(checkpoint: pathlib.Path) -> dict:
    """The source offsets of the newest entry in the checkpoint's offset log."""
    newest = max((path for path in (checkpoint / "offsets").iterdir() if path.name.isdigit()),
                 key=lambda path: int(path.name))
    return json.loads(newest.read_text().splitlines()[-1])


def values(topic_records: list[dict]) -> list[tuple[int, int, bytes]]:
    return sorted((record["partition"], record["offset"], record["value"]) for record in topic_records)


def test_max_offsets_per_trigger_available_now_and_restart(spark, broker, new_topic, producer, tmp_path):
    topic = new_topic(2)
    first = produce(producer, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(10)])
    sink = Batches()
    query = run_available_now(spark, broker, topic, tmp_path, sink, maxOffsetsPerTrigger="4")
    assert query.exception() is None
    assert sink.sizes() == [4, 4, 2]
    assert sink.rows() == values(first)
    assert checkpointed_offsets(tmp_path) == {topic: {"0": 5, "1": 5}}

    second = produce(producer, topic, [{"value": f"b{i}".encode(), "partition": 0} for i in range(3)])
    again = Batches()
    run_available_now(spark, broker, topic, tmp_path, again, maxOffsetsPerTrigger="4")
    assert again.sizes() == [3]
    assert again.rows() == values(second)
    assert checkpointed_offsets(tmp_path) == {topic: {"0": 8, "1": 5}}


def test_a_crashed_batch_is_replayed_with_the_same_offsets(spark, broker, new_topic, producer, tmp_path):
    topic = new_topic(2)
    records = produce(producer, topic, [{"value": f"c{i}".encode(), "partition": i % 2} for i in range(7)])
    crashing = Batches(fail_on_batch=1)
    query = run_available_now(spark, broker, topic, tmp_path, crashing, maxOffsetsPerTrigger="4")
    assert "crash in micro-batch 1" in str(query.exception())
    assert crashing.sizes() == [4]
    resumed = Batches()
    run_available_now(spark, broker, topic, tmp_path, resumed, maxOffsetsPerTrigger="4")
    assert sorted(resumed.batches) == [1]
    assert resumed.sizes() == [3]
    assert sorted(crashing.rows() + resumed.rows()) == values(records)


def test_a_partition_added_mid_stream_is_read_from_its_start(spark, broker, new_topic, producer, admin, tmp_path):
    topic = new_topic(1)
    first = produce(producer, topic, [{"value": f"p{i}".encode(), "partition": 0} for i in range(3)])
    sink = Batches()
    run_available_now(spark, broker, topic, tmp_path, sink)
    assert sink.rows() == values(first)
    assert admin.create_partitions({topic: 2})[topic] is None
    second = produce(producer, topic, [{"value": b"new-0", "partition": 1}, {"value": b"new-1", "partition": 1},
                                       {"value": b"old", "partition": 0}])
    again = Batches()
    run_available_now(spark, broker, topic, tmp_path, again, minOffsetsPerTrigger="100")  # availableNow ignores it
    assert again.rows() == values(second)
    assert checkpointed_offsets(tmp_path) == {topic: {"0": 4, "1": 2}}


@pytest.mark.slow
def test_deleted_records_fail_the_query_or_are_skipped(spark, broker, new_topic, producer, admin, tmp_path):
    topic = new_topic(1)
    produce(producer, topic, [{"value": f"d{i}".encode(), "partition": 0} for i in range(4)])
    run_available_now(spark, broker, topic, tmp_path, Batches())
    later = produce(producer, topic, [{"value": f"e{i}".encode(), "partition": 0} for i in range(6)])
    deleted = admin.delete_records({(topic, 0): 7})
    assert not isinstance(next(iter(deleted.values())), Exception)

    failing = run_available_now(spark, broker, topic, tmp_path, Batches())
    message = str(failing.exception())
    assert "offsets 4 to 6 of" in message and "failOnDataLoss" in message

    skipping = Batches()
    run_available_now(spark, broker, topic, tmp_path, skipping, failOnDataLoss="false")
    assert skipping.rows() == values([record for record in later if record["offset"] >= 7])
