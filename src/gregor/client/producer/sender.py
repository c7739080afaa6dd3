"""The producer's I/O side: a task on the network thread that turns queued batches into
Produce requests and their responses into completed futures.

One loop: expire batches past `delivery.timeout.ms`, get a producer id when idempotent, ask the
accumulator which leaders have sendable batches, drain them into one Produce request per
leader (at most `max.in.flight.requests.per.connection` outstanding per leader), then sleep
until the next linger deadline or a wakeup (a batch filled, a flush, a response, close).
Responses are handled as the Java client's Sender does: retriable errors put the batch back
(with backoff, until `retries` or `delivery.timeout.ms` run out), stale-metadata errors ask for
a metadata refresh, DUPLICATE_SEQUENCE_NUMBER counts as success.

A transactional producer's sender (`transactions` set) sends a partition's batches only once
AddPartitionsToTxn has added it to the transaction, marks its batches transactional, never takes
a new identity on its own (init_transactions and an abort's epoch bump do), and tells the
`TransactionManager` of every failed batch: the transaction can then only be aborted, and
the batches still queued fail with the transaction's error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from gregor.client.errors import (
    ClientErrorCode, KafkaConnectionError, KafkaError, KafkaException, error_for, transaction_error,
)
from gregor.client.network import STALE_METADATA_ERRORS, NetworkClient
from gregor.client.producer.accumulator import RecordAccumulator
from gregor.client.producer.batch import ProducerBatch
from gregor.client.producer.idempotence import ProducerIdentity
from gregor.client.producer.transaction_requests import TransactionRequests
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import InitProducerIdRequest, ProduceRequest

log = logging.getLogger(__name__)

PRODUCE_VERSIONS = (3, 11)  # record batch v2 and up; v12+ (topic ids, KIP-890) not implemented
INIT_PRODUCER_ID_VERSIONS = (0, 4)
_SEQUENCE_ERRORS = frozenset({ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                              ErrorCode.INVALID_PRODUCER_EPOCH})
_FATAL_IN_TRANSACTION = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                   ErrorCode.INVALID_TXN_STATE})


@dataclass(frozen=True)
class SenderSettings:
    acks: int
    retries: int
    request_timeout_ms: int
    max_in_flight: int
    max_request_size: int
    compression: int
    compression_level: int | None
    idempotent: bool
    transaction_timeout_ms: int
    transactional_id: str | None = None


class Sender:
    def __init__(self, network: NetworkClient, accumulator: RecordAccumulator, settings: SenderSettings) -> None:
        self.network = network
        self.accumulator = accumulator
        self.settings = settings
        self.identity = ProducerIdentity()
        self._wakeup: asyncio.Event | None = None
        self._in_flight: dict[int, int] = {}
        self._requests: set[asyncio.Task] = set()
        self._stopping = False
        self._forced = False
        self.sleeping_until = 0.0  # time.monotonic(); read by sending threads to decide on a wakeup
        self._wakeup_pending = False  # a wakeup_threadsafe whose call has not run yet
        self._loop: asyncio.AbstractEventLoop | None = None
        self.transactions: TransactionRequests | None = None

    # -- control, from any thread through the loop --

    def wakeup(self) -> None:
        """Wake the loop (call on the network thread)."""
        self._wakeup_pending = False
        if self._wakeup is not None:
            self._wakeup.set()

    def wakeup_threadsafe(self) -> None:
        """Wake the loop from another thread, unless a wakeup is already on its way: the loop then
        looks at the accumulator after it anyway (a wakeup costs a system call, during which the
        sending thread lets go of the GIL)."""
        if self._wakeup_pending:
            return
        loop = self._loop
        if loop is not None and not loop.is_closed():
            self._wakeup_pending = True
            loop.call_soon_threadsafe(self.wakeup)

    def stop(self, force: bool) -> None:
        """Finish (send what is queued, then return) or, forced, fail what is left (network thread)."""
        self._stopping = True
        self.accumulator.closing = True
        if force:
            self._forced = True
        self.wakeup()

    # -- the loop --

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        try:
            while True:
                if self._forced:
                    break
                if self._stopping and not self.accumulator.has_incomplete():
                    break
                delay = await self._run_once()
                self.sleeping_until = time.monotonic() + delay
                if delay > 0:
                    try:
                        async with asyncio.timeout(delay):
                            await self._wakeup.wait()
                    except TimeoutError:
                        pass
                self._wakeup.clear()
                self.sleeping_until = 0.0
        finally:
            await self._abort_everything()

    async def _run_once(self) -> float:
        now = time.monotonic()
        for batch in self.accumulator.expired(now):
            self._give_up(batch, KafkaException(
                ClientErrorCode._MSG_TIMED_OUT,
                f"{batch.count} record(s) for {batch.topic}-{batch.partition} expired after "
                f"{self.accumulator.delivery_timeout_s * 1000:.0f} ms (delivery.timeout.ms)"))
        transactions = self.transactions
        sendable = None
        add_delay = 0.0
        if transactions is not None:
            manager = transactions.manager
            if manager.failed:
                self._fail_queued(manager.last_error)
            if not self.identity.known:
                return 3600.0  # init_transactions gives the identity (and wakes us)
            pending = manager.pending_partitions()
            if pending:
                add_delay = await transactions.add_partitions(pending)
                if manager.failed:
                    self._fail_queued(manager.last_error)
            sendable = manager.is_sendable
        elif self.settings.idempotent and not self.identity.known:
            if any(self._in_flight.values()):
                return 3600.0  # batches sent under the old identity come back first (a response wakes us)
            if self.accumulator.has_incomplete():
                return await self._init_producer_id()
            return 1.0
        cluster = self.network.cluster
        self.accumulator.report_load(cluster)
        while True:
            ready, next_check, unknown_leader = self.accumulator.ready(cluster, now, sendable)
            nodes = []
            for node in ready:
                can_drain = self._in_flight.get(node, 0) < self.settings.max_in_flight
                self.accumulator.node_polled(node, now, can_drain)
                if can_drain:
                    nodes.append(node)
            drained = self.accumulator.drain(cluster, nodes, self.settings.max_request_size, now, sendable) \
                if nodes else {}
            for node, batches in drained.items():
                self._send(node, batches)
            if not drained:
                break
        if unknown_leader:
            self.network.request_metadata_update()
            next_check = min(next_check, self.network.settings.retry_backoff_ms / 1000)
        if add_delay:
            next_check = min(next_check, add_delay)
        return 3600.0 if next_check == float("inf") else max(next_check, 0.0)

    def _fail_queued(self, error: KafkaException | None) -> None:
        """Fail the batches not sent yet of a transaction that cannot commit (Java's
        abortUndrainedBatches)."""
        for batch in self.accumulator.abort_queued():
            self._complete(batch, error or KafkaException(
                ClientErrorCode._STATE, "the transaction was aborted before the record was sent"))

    async def _init_producer_id(self) -> float:
        request = InitProducerIdRequest(transactional_id=None,
                                        transaction_timeout_ms=self.settings.transaction_timeout_ms)
        try:
            response = await self.network.send(request, versions=INIT_PRODUCER_ID_VERSIONS,
                                               timeout_ms=self.settings.request_timeout_ms)
        except KafkaException as error:
            log.warning("InitProducerId failed, will retry: %s", error)
            return self.network.settings.retry_backoff_ms / 1000
        if response.error_code != ErrorCode.NONE:
            error = error_for(response.error_code, "InitProducerId for the idempotent producer")
            if not error.retriable:
                for batch in self.accumulator.abort_queued():
                    self._complete(batch, error)
                return self.network.settings.retry_backoff_ms / 1000
            return self.network.settings.retry_backoff_ms / 1000
        self.identity.set(response.producer_id, response.producer_epoch)
        log.info("idempotent producer has producer id %d epoch %d", response.producer_id, response.producer_epoch)
        return 0.0

    # -- requests --

    def _send(self, node: int, batches: list[ProducerBatch]) -> None:
        if self.settings.idempotent:
            for batch in batches:
                self.identity.stamp(batch)
        transactional = self.transactions is not None
        by_topic: dict[str, list[ProduceRequest.PartitionProduceData]] = {}
        for batch in batches:
            by_topic.setdefault(batch.topic, []).append(ProduceRequest.PartitionProduceData(
                index=batch.partition,
                records=batch.build_chunks(self.settings.compression, self.settings.compression_level,
                                           transactional)))
        request = ProduceRequest(
            transactional_id=self.settings.transactional_id, acks=self.settings.acks,
            timeout_ms=self.settings.request_timeout_ms,
            topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=partitions)
                        for topic, partitions in by_topic.items()])
        self._in_flight[node] = self._in_flight.get(node, 0) + 1
        task = asyncio.get_running_loop().create_task(self._produce(node, request, batches))
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _produce(self, node: int, request: ProduceRequest, batches: list[ProducerBatch]) -> None:
        try:
            response = await self.network.send(request, node, versions=PRODUCE_VERSIONS,
                                               timeout_ms=self.settings.request_timeout_ms,
                                               expect_response=self.settings.acks != 0)
        except KafkaException as error:
            if error.code == ClientErrorCode._DESTROY:
                for batch in batches:
                    self._complete(batch, error)
            else:
                # a leader that left the cluster (no connection to it) is stale metadata: retry
                # on the new leader, as the Java client does after a disconnect
                self.network.request_metadata_update()
                retriable = True if isinstance(error, KafkaConnectionError) else None
                for batch in batches:
                    self._retry_or_fail(batch, error, retriable=retriable)
        else:
            if response is None:
                for batch in batches:
                    self._succeed(batch, -1, -1)
            else:
                self._handle_response(response, batches)
        finally:
            self._in_flight[node] -= 1
            self.wakeup()

    def _handle_response(self, response: Any, batches: list[ProducerBatch]) -> None:
        by_partition = {(batch.topic, batch.partition): batch for batch in batches}
        for topic in response.responses:
            for partition in topic.partition_responses:
                batch = by_partition.pop((topic.name, partition.index), None)
                if batch is None:
                    continue
                code = partition.error_code
                if code == ErrorCode.NONE or code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                    self._succeed(batch, partition.base_offset, partition.log_append_time_ms)
                    continue
                message = partition.error_message or ""
                if partition.record_errors:
                    message = "; ".join(filter(None, [message] + [
                        f"record {item.batch_index}: {item.batch_index_error_message}"
                        for item in partition.record_errors]))
                self._handle_partition_error(batch, code, message)
        for batch in by_partition.values():
            left_out = f"the broker's response left out {batch.topic}-{batch.partition}"
            self._retry_or_fail(batch, KafkaException(ErrorCode.UNKNOWN_SERVER_ERROR, left_out))

    def _handle_partition_error(self, batch: ProducerBatch, code: int, message: str) -> None:
        where = f"{batch.topic}-{batch.partition}"
        error = error_for(code, f"{where}: {message}" if message else where)
        if code in STALE_METADATA_ERRORS:
            self.network.request_metadata_update()
        if self.transactions is not None and (code in _SEQUENCE_ERRORS or code in _FATAL_IN_TRANSACTION):
            # Not retried: the transaction must be aborted (an old epoch: InvalidProducerEpochError,
            # KIP-588; a sequence gap: the abort bumps the epoch) or the producer is done.
            self._complete(batch, transaction_error(code, f"{where}: {message}" if message else where,
                                                    fatal=code in _FATAL_IN_TRANSACTION, abortable=True))
            return
        if self.settings.idempotent:
            if batch.producer_id != self.identity.producer_id and code in _SEQUENCE_ERRORS:
                batch.base_sequence = -1  # sent under an identity given up since: sequence it anew
                self._retry_or_fail(batch, error, retriable=True)
                return
            if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and self.identity.has_earlier_pending(batch):
                self._retry_or_fail(batch, error, retriable=True)
                return
            if code in _SEQUENCE_ERRORS:
                self.identity.reset()
                if code == ErrorCode.UNKNOWN_PRODUCER_ID:
                    batch.base_sequence = -1
                    self._retry_or_fail(batch, error, retriable=True)
                else:
                    self._complete(batch, error)
                return
        self._retry_or_fail(batch, error)

    # -- outcomes --

    def _retry_or_fail(self, batch: ProducerBatch, error: KafkaException, *, retriable: bool | None = None) -> None:
        now = time.monotonic()
        can_retry = error.retriable if retriable is None else retriable
        if not can_retry or self._forced:
            self._give_up(batch, error)
            return
        if batch.attempts >= self.settings.retries:
            self._give_up(batch, error)
            return
        if now >= batch.created + self.accumulator.delivery_timeout_s:
            self._give_up(batch, KafkaException(KafkaError.of(
                ClientErrorCode._MSG_TIMED_OUT,
                f"{batch.count} record(s) for {batch.topic}-{batch.partition} expired after "
                f"{self.accumulator.delivery_timeout_s * 1000:.0f} ms (delivery.timeout.ms); last error {error}")))
            return
        batch.attempts += 1
        batch.retry_at = now + self.network.retry_backoff.delay_ms(batch.attempts - 1) / 1000
        log.debug("retrying %r after %s", batch, error)
        self.accumulator.reenqueue(batch)

    def _give_up(self, batch: ProducerBatch, error: KafkaException) -> None:
        """Fail a batch; a sequenced one leaves a gap, so the identity must be renewed (by the
        transaction's abort, for a transactional producer)."""
        if self.settings.idempotent and self.transactions is None and batch.base_sequence >= 0 \
                and batch.producer_id == self.identity.producer_id:
            self.identity.reset()
        self._complete(batch, error)

    def _succeed(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        batch.in_flight = False
        self.identity.acknowledged(batch)
        batch.complete(base_offset, log_append_time, None)
        self.accumulator.finished(batch)

    def _complete(self, batch: ProducerBatch, error: KafkaException) -> None:
        if self.transactions is not None and error.code != ClientErrorCode._DESTROY:
            # a sequenced batch that failed leaves a gap (or may have been written): the abort
            # bumps the epoch so that sequences start again (KIP-360)
            self.transactions.manager.batch_failed(error, sequenced=batch.base_sequence >= 0)
        batch.in_flight = False
        self.identity.acknowledged(batch)
        batch.complete(-1, -1, error)
        self.accumulator.finished(batch)

    async def _abort_everything(self) -> None:
        closing = KafkaException(ClientErrorCode._DESTROY, "the producer was closed before the record was sent")
        for batch in self.accumulator.abort_queued():
            self._complete(batch, closing)
        for task in list(self._requests):
            task.cancel()
        await asyncio.gather(*self._requests, return_exceptions=True)
        for batch in self.accumulator.incomplete():
            if not batch.done:
                self._complete(batch, closing)
