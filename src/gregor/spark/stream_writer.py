"""`df.writeStream.format("gregor")`: each micro-batch's rows sent by its tasks, at-least-once by
default, exactly-once with `deliveryGuarantee=exactly-once` (see `exactly_once`).

At-least-once: every record of a committed micro-batch is in the topic at least once. A
micro-batch that Spark runs again — a task retry, or after a crash the batch that was in its
offset log but not yet in its commit log — sends its records again, so duplicates are confined to
that re-run batch.

Spark may call `commit(messages, batch_id)` again for a batch it already committed (a restart
between the sink's commit and the checkpoint's commit log), and may call `abort` after a commit
that succeeded. At-least-once, both are safe because neither changes the topics: the records are
durable once `write` returned, so commit only reports and abort only says which records stay.
Exactly-once, commit ends the tasks' transactions; a re-run batch's tasks find their markers and
hand over no transaction for partitions already committed. Spark runs each call in a fresh
process, so neither keeps state between calls.
"""

from __future__ import annotations

import logging
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from gregor.spark.exactly_once import abort_transactions, commit_transactions, write_in_transaction
from gregor.spark.options import SinkOptions
from gregor.spark.writer import TaskIdentity, WriteReport, describe_reports, write_batches

log = logging.getLogger(__name__)


class StreamWriter(DataSourceStreamArrowWriter):
    """The streaming sink (see the module doc)."""

    def __init__(self, options: SinkOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        if self._options.exactly_once:
            return write_in_transaction(iterator, self._options, TaskIdentity.current())
        return write_batches(iterator, self._options)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self._options.exactly_once:
            commit_transactions(messages, self._options, batchId)
        log.info("gregor sink: micro-batch %d wrote %s", batchId, describe_reports(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self._options.exactly_once:
            abort_transactions(messages, self._options, batchId)
            log.warning("gregor sink: micro-batch %d aborted; its transactions were aborted, nothing of it "
                        "is visible to read_committed consumers: %s", batchId, describe_reports(messages))
            return
        log.warning("gregor sink: micro-batch %d aborted; what its finished tasks wrote stays in the topics and "
                    "is written again when the batch re-runs (at-least-once): %s", batchId,
                    describe_reports(messages))
