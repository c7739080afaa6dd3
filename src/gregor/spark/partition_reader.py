"""Reading one offset range inside an executor's Python worker, as Arrow record batches.

Everything needed arrives in the pickled OffsetRange. The consumer is standalone (assign + seek,
no group, nothing committed) with `auto.offset.reset=none`, so records deleted between planning
and reading surface as OFFSET_OUT_OF_RANGE instead of a silent jump, and are then handled per
failOnDataLoss. Offsets may have gaps (compaction, transaction markers, aborted records with
read_committed); the range ends when the consumer's position reaches its end.

Records come from `Consumer.poll_columns`, which decodes each fetched record batch into columns in
one pass; the Arrow arrays are built straight from those lists (no object per record).
"""

from __future__ import annotations

import bisect
import time
from typing import Iterator

import pyarrow as pa

from gregor.client import Consumer, KafkaException, TopicPartition
from gregor.client.consumer import RecordChunk
from gregor.spark.ranges import OffsetRange, report_data_loss
from gregor.spark.schema import ARROW_HEADERS_TYPE, arrow_schema

_READ_DEFAULTS = {"max.poll.records": 10000, "max.partition.fetch.bytes": 8 * 1024 * 1024}
"""Bigger polls than a consumer's defaults: one poll becomes one Arrow batch."""
_POLL_SECONDS = 0.5
_US_UTC = pa.timestamp("us", tz="UTC")
_MS_UTC = pa.timestamp("ms", tz="UTC")


def read_range(offset_range: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The records of `offset_range`, in offset order, in batches of at most max.poll.records."""
    settings = offset_range.settings
    tp = TopicPartition(offset_range.topic, offset_range.partition)
    schema = arrow_schema(settings.include_headers)
    end = offset_range.end
    config = {**_READ_DEFAULTS, **settings.client_config, "enable.auto.commit": False, "auto.offset.reset": "none"}
    with Consumer(config) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, offset_range.start)
        position = offset_range.start
        last_progress = time.monotonic()
        while position < end:
            try:
                chunks = consumer.poll_columns(_POLL_SECONDS)
            except KafkaException as error:
                if error.name != "OFFSET_OUT_OF_RANGE":
                    raise
                position = _after_lost_records(consumer, tp, position, offset_range)
                if position < end:
                    consumer.seek(tp, position)
                continue
            past_end = False
            for chunk in chunks:
                wanted = bisect.bisect_left(chunk.columns.offsets, end)
                past_end = past_end or wanted < len(chunk)
                if wanted:
                    yield _to_batch(chunk, wanted, schema, settings.include_headers)
                    last_progress = time.monotonic()
            if past_end:
                break
            position = max(position, consumer.position(tp))
            if not chunks and position < end:
                if consumer.end_offsets([tp])[tp] <= position:
                    report_data_loss(settings.fail_on_data_loss,
                                     f"{tp.topic}-{tp.partition} ends at {position}, before the planned end {end}")
                    break
                if time.monotonic() - last_progress > settings.poll_timeout_ms / 1000:
                    raise TimeoutError(f"no record of {tp.topic}-{tp.partition} at or after offset {position} "
                                       f"arrived within kafkaConsumer.pollTimeoutMs ({settings.poll_timeout_ms} ms)")


def _after_lost_records(consumer: Consumer, tp: TopicPartition, position: int, offset_range: OffsetRange) -> int:
    """Where to go on after the partition said `position` is out of range (or raise)."""
    earliest = consumer.beginning_offsets([tp])[tp]
    fail = offset_range.settings.fail_on_data_loss
    if earliest > position:
        last = min(earliest, offset_range.end) - 1
        report_data_loss(fail, f"offsets {position} to {last} of {tp.topic}-{tp.partition} were deleted before "
                               f"they were read")
        return earliest
    report_data_loss(fail, f"offset {position} of {tp.topic}-{tp.partition} is past the partition's end")
    return offset_range.end


def _to_batch(chunk: RecordChunk, count: int, schema: pa.Schema, include_headers: bool) -> pa.RecordBatch:
    """The first `count` records of `chunk` as a batch of Spark's source schema."""
    columns = chunk.columns
    tp = chunk.topic_partition
    whole = count == len(columns)
    arrays = [
        pa.array(columns.keys if whole else columns.keys[:count], pa.binary()),
        pa.array(columns.values if whole else columns.values[:count], pa.binary()),
        pa.repeat(pa.scalar(tp.topic, pa.string()), count),
        pa.repeat(pa.scalar(tp.partition, pa.int32()), count),
        pa.array(columns.offsets if whole else columns.offsets[:count], pa.int64()),
        pa.array(columns.timestamps if whole else columns.timestamps[:count], _MS_UTC).cast(_US_UTC),
        pa.repeat(pa.scalar(chunk.timestamp_type, pa.int32()), count),
    ]
    if include_headers:
        arrays.append(pa.array(columns.headers if whole else columns.headers[:count], ARROW_HEADERS_TYPE))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
