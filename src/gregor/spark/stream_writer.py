"""`df.writeStream.format("gregor")`: each micro-batch's rows sent by its tasks, at-least-once.

What holds today: every record of a committed micro-batch is in the topic at least once. A
micro-batch that Spark runs again — a task retry, or after a crash the batch that was in its
offset log but not yet in its commit log — sends its records again, so duplicates are confined to
that re-run batch.

Spark may call `commit(messages, batch_id)` again for a batch it already committed (a restart
between the sink's commit and the checkpoint's commit log), and may call `abort` after a commit
that succeeded. Both are safe here because neither changes the topics: the records are durable
once `write` returned, so commit only reports and abort only says which records stay. Spark runs
each call in a fresh process, so neither keeps state between calls.

Exactly-once needs Gregor's transactions (a later issue) and slots into `write` and `commit`:
`write` opens a transactional producer whose id is derived from `TaskIdentity` (query id +
partition id, stable across retries and restarts, so a new attempt fences the old one), sends
the rows plus a batch marker (query id, batch id) and only prepares the transaction; `commit`
completes the batch's transactions, and on a replay first checks the marker so a batch already
committed is not written twice. Until then this sink does not claim it.
"""

from __future__ import annotations

import logging
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from gregor.spark.options import SinkOptions
from gregor.spark.writer import WriteReport, describe_reports, write_batches

log = logging.getLogger(__name__)


class StreamWriter(DataSourceStreamArrowWriter):
    """At-least-once streaming sink (see the module doc)."""

    def __init__(self, options: SinkOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        return write_batches(iterator, self._options)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("gregor sink: micro-batch %d wrote %s", batchId, describe_reports(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("gregor sink: micro-batch %d aborted; what its finished tasks wrote stays in the topics and "
                    "is written again when the batch re-runs (at-least-once): %s", batchId,
                    describe_reports(messages))
