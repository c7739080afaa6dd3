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
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from gregor.client import Producer
from gregor.client.producer import BatchMetadata, ColumnsFuture
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

    def add_batch(self, landed: BatchMetadata) -> None:
        name = f"{landed.topic}-{landed.partition}"
        low, high = landed.base_offset, landed.base_offset + landed.record_count - 1
        first, last = self.offsets.get(name, (low, high))
        self.offsets[name] = (min(first, low), max(last, high))
        self.records += landed.record_count


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


_SENT_COLUMNS = ("value", "key", "partition", "headers")


def _by_topic(batch: pa.RecordBatch, topic_option: str | None) -> Iterator[tuple[str, pa.Table]]:
    """The rows for each topic (the topic option wins over the column) as the columns
    `send_columns` reads (value, key, partition, headers; others, as Spark's Kafka sink, ignored)."""
    names = batch.schema.names
    table = pa.Table.from_batches([batch]).select([name for name in _SENT_COLUMNS if name in names])
    if topic_option is not None:
        yield topic_option, table
        return
    topics = batch.column("topic")
    if topics.null_count:
        raise ValueError("a row has a null topic; set the topic option to give a default topic")
    distinct = pc.unique(topics).to_pylist()
    if len(distinct) == 1:
        yield distinct[0], table
        return
    for topic in distinct:
        yield topic, table.filter(pc.equal(topics, topic))


def _check_headers(table: pa.Table, topic: str) -> None:
    if "headers" not in table.schema.names:
        return
    names = pc.struct_field(pc.list_flatten(table.column("headers")), [0])
    if names.null_count:
        raise ValueError(f"a row for topic {topic} has a header with a null key")


def write_batches(batches: Iterator[pa.RecordBatch], options: SinkOptions) -> WriteReport:
    """Send every row, a whole Arrow batch at a time (columnar produce: encoded into record batches
    without a Python object per row, except for keys placed by murmur2 and headers), and wait until
    the broker acknowledged each; raise the first failure (Spark then retries the task, which is
    where at-least-once may duplicate)."""
    report = WriteReport(TaskIdentity.current())
    with Producer(options.client_config) as producer:
        futures = send_rows(producer, batches, options.topic)
        producer.flush()
    collect(futures, report)
    return report


def send_rows(producer: Producer, batches: Iterator[pa.RecordBatch], topic_option: str | None) -> list[ColumnsFuture]:
    """Queue every row with `send_columns`, stopping early once a send has failed."""
    futures: list[ColumnsFuture] = []
    for batch in batches:
        for topic, table in _by_topic(batch, topic_option):
            _check_headers(table, topic)
            futures.append(producer.send_columns(topic, table))
        if any(future.done() and _failed(future) for future in futures):
            break
    return futures


def collect(futures: list[ColumnsFuture], report: WriteReport) -> None:
    """Add where each batch landed to the report; raise the first failure."""
    for future in futures:
        for landed in future.get(0):
            report.add_batch(landed)


def _failed(future: ColumnsFuture) -> bool:
    return any(result.error is not None for result, _ in future.batches)


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
