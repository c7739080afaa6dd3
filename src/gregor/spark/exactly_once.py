"""The exactly-once streaming sink (`deliveryGuarantee=exactly-once`): each micro-batch becomes
visible whole, once, through Kafka transactions committed by the driver.

Task side (`write_in_transaction`, on an executor): the task of Spark partition p in micro-batch
B uses the transactional id `<transactionalIdPrefix>-<p>`, the same in every batch and every
attempt. `init_transactions` fences an older attempt of the task (a retry, a zombie) and aborts a
transaction it left open. The task then reads its batch marker: the offset that the sink-owned
group `<transactionalIdPrefix>-<p>` committed for partition 0 of the output topic is the last
micro-batch whose transaction for p was committed, and its metadata the query id (stable across
restarts from one checkpoint; a marker of another query, such as an earlier one with a fresh
checkpoint and the same prefix, is ignored). If it is B or later, the batch's rows for p are in
the topic already (a re-run after a crash during the driver's commit) and the task writes
nothing. Otherwise it sends its rows and, in the same transaction, commits the marker B
(`send_offsets_to_transaction`), flushes, and returns its `TransactionHandle` (id, producer id,
epoch) without ending the transaction.

Driver side (`commit_transactions`): Spark calls `commit` once every task of the batch succeeded;
it resumes each handle and commits it (EndTxn), so the batch's records and markers appear to
read_committed consumers together, before Spark writes the batch to its commit log. A crash before
that commit log entry re-runs the batch from the same offsets: partitions whose transaction was
committed find their marker and skip, the others' open transactions are aborted by the new tasks'
`init_transactions` and written again. A commit that finds a transaction aborted meanwhile (it
outlived `transaction.timeout.ms`, or a zombie attempt re-initialized the id) raises, so the query
fails instead of losing that partition's rows; restarted, it re-runs the batch.
"""

from __future__ import annotations

import concurrent.futures
import logging
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from gregor.client import (
    AdminClient, ConsumerGroupMetadata, KafkaException, OffsetAndMetadata, Producer, TopicPartition,
)
from gregor.client.config import Role, config_keys
from gregor.client.producer import TransactionHandle
from gregor.spark.options import SinkOptions
from gregor.spark.writer import TaskIdentity, WriteReport, collect, send_rows

log = logging.getLogger(__name__)

_MAX_PARALLEL_COMMITS = 8


@dataclass
class TransactionalReport(WriteReport):
    """A task's report plus the transaction the driver must end (None: the batch's marker showed
    that this partition was committed by an earlier run, and nothing was written)."""

    handle: TransactionHandle | None = None


def transactional_id(options: SinkOptions, partition_id: int) -> str:
    return f"{options.transactional_id_prefix}-{partition_id}"


def write_in_transaction(batches: Iterator[pa.RecordBatch], options: SinkOptions,
                         task: TaskIdentity) -> TransactionalReport:
    """The task side (see the module doc)."""
    if task.batch_id is None:
        raise RuntimeError("deliveryGuarantee=exactly-once needs Spark's micro-batch id in the task "
                           "(streaming.sql.batchId); it is only for writeStream")
    report = TransactionalReport(task)
    txn_id = transactional_id(options, task.partition_id)
    assert options.topic is not None, "parse_sink_options requires the topic option in this mode"
    producer = Producer({**options.client_config, "transactional.id": txn_id})
    try:
        producer.init_transactions()
        marker = committed_marker(options, txn_id, task.query_id or "")
        if marker is not None and marker >= task.batch_id:
            log.info("gregor sink: %s already committed micro-batch %d (marker %d); writing nothing",
                     txn_id, task.batch_id, marker)
            return report
        producer.begin_transaction()
        try:
            futures = send_rows(producer, batches, options.topic)
            producer.send_offsets_to_transaction(
                {TopicPartition(options.topic, 0): OffsetAndMetadata(task.batch_id, task.query_id or "")},
                ConsumerGroupMetadata(txn_id))
            producer.flush()
            collect(futures, report)
            report.handle = producer.transaction_handle()
        except BaseException:
            _quietly(producer.abort_transaction, txn_id)
            raise
    finally:
        producer.close()
    return report


def committed_marker(options: SinkOptions, group_id: str, query_id: str) -> int | None:
    """The last micro-batch of query `query_id` committed by the task owning `group_id`, or None."""
    admin_keys = config_keys(Role.ADMIN)
    admin = AdminClient({key: value for key, value in options.client_config.items() if key in admin_keys})
    try:
        assert options.topic is not None
        found = admin.list_consumer_group_offsets(group_id, [(options.topic, 0)], require_stable=True)
    finally:
        admin.close()
    committed = found.get(TopicPartition(options.topic, 0))
    if isinstance(committed, KafkaException):
        raise committed
    if committed is None or committed.offset < 0 or (committed.metadata or "") != query_id:
        return None
    return committed.offset


def commit_transactions(messages: Sequence[WriterCommitMessage | None], options: SinkOptions, batch_id: int) -> None:
    """The driver side: commit every task's transaction (in parallel); raise the first failure."""
    _end_all(messages, options, batch_id, commit=True)


def abort_transactions(messages: Sequence[WriterCommitMessage | None], options: SinkOptions, batch_id: int) -> None:
    """Abort the transactions of the tasks that finished (the others' are aborted by the
    re-run's init_transactions, or by the coordinator after transaction.timeout.ms)."""
    try:
        _end_all(messages, options, batch_id, commit=False)
    except KafkaException as error:
        log.warning("gregor sink: aborting micro-batch %d: %s (the re-run aborts what is left)", batch_id, error)


def _end_all(messages: Sequence[WriterCommitMessage | None], options: SinkOptions, batch_id: int,
             *, commit: bool) -> None:
    handles = [message.handle for message in messages
               if isinstance(message, TransactionalReport) and message.handle is not None]
    if not handles:
        return
    with concurrent.futures.ThreadPoolExecutor(min(len(handles), _MAX_PARALLEL_COMMITS),
                                               thread_name_prefix="gregor-sink-commit") as pool:
        results = list(pool.map(lambda handle: _end(handle, options, commit), handles))
    failures = [error for error in results if error is not None]
    log.info("gregor sink: micro-batch %d: %s %d transactions, %d failed", batch_id,
             "committed" if commit else "aborted", len(handles) - len(failures), len(failures))
    if failures:
        raise failures[0]


def _end(handle: TransactionHandle, options: SinkOptions, commit: bool) -> KafkaException | None:
    producer = Producer({**options.client_config, "transactional.id": handle.transactional_id})
    try:
        producer.resume_transaction(handle)
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
    except KafkaException as error:
        return error
    finally:
        producer.close()
    return None


def _quietly(call: Callable[[], None], txn_id: str) -> None:
    try:
        call()
    except KafkaException as error:
        log.warning("gregor sink: aborting the transaction of %s failed: %s", txn_id, error)
