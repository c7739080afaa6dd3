"""Writing a DataFrame's rows to topics with Gregor's Producer: the task side (shared by the batch
and the streaming sink) and the batch sink.

Delivery is at-least-once, as with Spark's Kafka sink: a task returns only after the broker
acknowledged every record it sent (the producer is idempotent, so its own retries do not
duplicate), but when Spark re-runs a task or a job, the records of the earlier attempt stay in
the topic. Kafka has no way to take records back, so `abort` cannot undo them; it logs which
offsets stay.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from gregor.client import KafkaException, Producer, RecordMetadata
from gregor.spark.options import SinkOptions

log = logging.getLogger(__name__)

QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


@dataclass(frozen=True)
class TaskIdentity:
    """Which Spark task wrote. For a streaming write, (query id, partition id) is stable across
    micro-batches, restarts and task retries: the key an exactly-once mode will derive its
    transactional id from (see docs/spark.md)."""

    partition_id: int
    attempt: int
    query_id: str | None = None
    batch_id: int | None = None

    @classmethod
    def current(cls) -> TaskIdentity:
        """The running task's identity (Spark sets the query and batch ids as local properties)."""
        context = TaskContext.get()
        if context is None:
            return cls(partition_id=0, attempt=0)
        batch = context.getLocalProperty(BATCH_ID_PROPERTY)
        return cls(context.partitionId(), context.attemptNumber(), context.getLocalProperty(QUERY_ID_PROPERTY),
                   None if batch is None else int(batch))


@dataclass
class WriteReport(WriterCommitMessage):
    """What one task wrote: its identity, the record count, and per topic-partition the first and
    last offset the broker gave its records."""

    task: TaskIdentity
    records: int = 0
    offsets: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, metadata: RecordMetadata) -> None:
        name = f"{metadata.topic}-{metadata.partition}"
        first, last = self.offsets.get(name, (metadata.offset, metadata.offset))
        self.offsets[name] = (min(first, metadata.offset), max(last, metadata.offset))
        self.records += 1


def describe_reports(messages: Sequence[WriterCommitMessage | None]) -> str:
    """One line for the log: records written and the offsets they got."""
    reports = [message for message in messages if isinstance(message, WriteReport)]
    spans: dict[str, tuple[int, int]] = {}
    for report in reports:
        for name, (first, last) in report.offsets.items():
            low, high = spans.get(name, (first, last))
            spans[name] = (min(low, first), max(high, last))
    where = ", ".join(f"{name}@{first}..{last}" for name, (first, last) in sorted(spans.items())) or "nothing"
    failed = sum(1 for message in messages if message is None)
    return (f"{sum(report.records for report in reports)} records from {len(reports)} tasks "
            f"({failed} failed) at {where}")


def _binary(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    """A key or value column as bytes (strings are UTF-8 encoded); None when absent."""
    if name not in batch.schema.names:
        return None
    column = batch.column(name)
    return (column.cast(pa.binary()) if pa.types.is_string(column.type) else column).to_pylist()


def _rows(batch: pa.RecordBatch, topic_option: str | None) -> Iterator[tuple[str, Any, Any, int | None, list]]:
    """(topic, value, key, partition, headers) per row; the topic option wins over the column."""
    count = batch.num_rows
    names = batch.schema.names
    values = _binary(batch, "value")
    keys = _binary(batch, "key") or [None] * count
    topics = [topic_option] * count if topic_option is not None else batch.column("topic").to_pylist()
    partitions = batch.column("partition").to_pylist() if "partition" in names else [None] * count
    headers = batch.column("headers").to_pylist() if "headers" in names else [None] * count
    for topic, value, key, partition, header in zip(topics, values, keys, partitions, headers):
        if topic is None:
            raise ValueError("a row has a null topic; set the topic option to give a default topic")
        pairs = [(item["key"], item["value"]) for item in header] if header else []
        if any(name is None for name, _ in pairs):
            raise ValueError(f"a row for topic {topic} has a header with a null key")
        yield topic, value, key, partition, pairs


def write_batches(batches: Iterator[pa.RecordBatch], options: SinkOptions) -> WriteReport:
    """Send every row and wait until the broker acknowledged each; raise the first failure (Spark
    then retries the task, which is where at-least-once may duplicate)."""
    report = WriteReport(TaskIdentity.current())
    failures: list[KafkaException] = []

    def delivered(metadata: RecordMetadata, exception: KafkaException | None) -> None:
        if exception is not None:
            failures.append(exception)
        else:
            report.add(metadata)

    with Producer(options.client_config) as producer:
        for batch in batches:
            for topic, value, key, partition, headers in _rows(batch, options.topic):
                producer.send(topic, value, key=key, partition=partition, headers=headers, callback=delivered)
            if failures:
                break
        producer.flush()
    if failures:
        raise failures[0]
    return report


class BatchWriter(DataSourceArrowWriter):
    """`df.write.format("gregor")`; Spark's save mode does not apply (topics are appended to)."""

    def __init__(self, options: SinkOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        return write_batches(iterator, self._options)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("gregor sink: wrote %s", describe_reports(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("gregor sink: write aborted; what the finished tasks wrote stays in the topics "
                    "(at-least-once): %s", describe_reports(messages))
