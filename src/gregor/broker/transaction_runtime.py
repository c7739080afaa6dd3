"""The broker's side of the transaction coordinator: parks requests, writes `__transaction_state`,
sends markers, keeps the timer, hands out producer ids.

`gregor.coordinator.transaction.TransactionCoordinator` is sans-IO; this edge carries out its
effects: a `Respond` answers a parked request's future; an `AppendTransaction` becomes one record
batch appended with acks=all to the `__transaction_state` partition, reported back once the high
watermark passes it; a `WriteMarkers` becomes one WriteTxnMarkers request per partition leader over
the inter-broker listener, whose per-partition errors go back to the coordinator (which retries).
A partition whose topic is gone counts as written: its marker has nowhere to go, as in Kafka.
Partitions are loaded when this broker becomes their leader, with the leader epoch as the
coordinator epoch, and unloaded when it stops leading them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import defaultdict, deque
from typing import Awaitable, Callable, Iterable

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.config import BrokerConfig
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.group_runtime import log_records
from gregor.broker.peer_channel import PLAINTEXT, RequestConnection
from gregor.broker.security.listener_security import OutboundSecurity
from gregor.broker.services import ControllerGateway, MetadataView, PartitionHost
from gregor.controller.operations import CreatableTopic, CreateTopicResult
from gregor.coordinator.transaction import (
    AppendTransaction, Effect, Respond, TransactionConfig, TransactionCoordinator, TxnResult, WriteMarkers,
)
from gregor.coordinator.transaction.records import TopicPartition
from gregor.metadata.features import TRANSACTION_VERSION
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import (
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
)
from gregor.records.record import BatchBuilder

log = logging.getLogger("gregor.transactions")

TRANSACTION_TOPIC = "__transaction_state"
APPEND_TIMEOUT_MS = 30000  # Kafka's coordinator waits request.timeout.ms for its appends
MARKER_TIMEOUT_S = 30.0
WRITE_TXN_MARKERS_VERSION = 1
ADD_PARTITIONS_VERIFY_VERSION = 4


class TransactionRuntime:
    def __init__(self, config: BrokerConfig, metadata: MetadataView, partitions: PartitionHost,
                 controller: ControllerGateway, clock: Clock = wall_clock_ms) -> None:
        self._config = config
        self._clock = clock
        self._metadata = metadata
        self._partitions = partitions
        self._controller = controller
        self.coordinator = TransactionCoordinator(TransactionConfig(
            transaction_state_log_num_partitions=config.get("transaction.state.log.num.partitions"),
            transaction_max_timeout_ms=config.get("transaction.max.timeout.ms"),
            transaction_abort_timed_out_transaction_cleanup_interval_ms=config.get(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            transactional_id_expiration_ms=config.get("transactional.id.expiration.ms"),
            transaction_remove_expired_transaction_cleanup_interval_ms=config.get(
                "transaction.remove.expired.transaction.cleanup.interval.ms")))
        self._parked: dict[object, asyncio.Future[TxnResult]] = {}
        self._timer = DeadlineTimer(clock, lambda now_ms: self.apply(self.coordinator.tick(now_ms)))
        self._loaded: dict[int, int] = {}
        self._spare_ids: deque[int] = deque()
        self._connections: dict[int, RequestConnection] = {}
        self._verifiers: dict[int, RequestConnection] = {}  # apart, so verifications do not queue behind markers
        self._correlation = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def transaction_version(self) -> int:
        """The finalized `transaction.version` (2: KIP-890's protocol)."""
        return self._metadata.image.features.get(TRANSACTION_VERSION, 0)

    # -- producer ids

    async def ready_producer_id(self) -> None:
        """Make sure one producer id is at hand for the next coordinator call (KafkaError when
        the controller allocates none)."""
        if not self._spare_ids:
            self._spare_ids.append(await self._controller.next_producer_id())

    def take_producer_id(self) -> int:
        return self._spare_ids.popleft()

    # -- requests

    def park(self, call: Callable[[object], list[Effect]]) -> Awaitable[TxnResult]:
        """Run a coordinator call answered by a `Respond`, now or after a write."""
        token = object()
        future: asyncio.Future[TxnResult] = asyncio.get_running_loop().create_future()
        self._parked[token] = future
        self.apply(call(token))
        return future

    def apply(self, effects: Iterable[Effect]) -> None:
        """Carry out effects in order; those caused by carrying them out follow after."""
        pending = deque(effects)
        while pending:
            effect = pending.popleft()
            if isinstance(effect, Respond):
                future = self._parked.pop(effect.token, None)
                if future is not None and not future.done():
                    future.set_result(effect.result)
            elif isinstance(effect, AppendTransaction):
                pending.extend(self._append(effect))
            elif isinstance(effect, WriteMarkers):
                task = asyncio.get_running_loop().create_task(self._send_markers(effect))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        self._timer.arm(self.coordinator.next_deadline())

    def _append(self, effect: AppendTransaction) -> list[Effect]:
        partition = self._partitions.partition(TRANSACTION_TOPIC, effect.partition)
        if partition is None:
            return self.coordinator.append_done(effect.append_id, ErrorCode.NOT_LEADER_OR_FOLLOWER, self._clock())
        builder = BatchBuilder()
        builder.append(effect.timestamp_ms, effect.key, effect.value)
        try:
            info = partition.append_as_leader(memoryview(builder.build()), self._clock(), -1)
        except KafkaError as error:
            log.warning("appending to %s-%d failed: %s", TRANSACTION_TOPIC, effect.partition, error)
            return self.coordinator.append_done(effect.append_id, ErrorCode(error.code), self._clock())
        replicated: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self._partitions.on_leader_append(partition, partition.await_replication(
            info, replicated, self._clock(), APPEND_TIMEOUT_MS))
        if replicated.done():
            return self.coordinator.append_done(effect.append_id, replicated.result(), self._clock())
        replicated.add_done_callback(lambda done: self.apply(self.coordinator.append_done(
            effect.append_id, done.result(), self._clock())))
        return []

    # -- markers

    async def _send_markers(self, effect: WriteMarkers) -> None:
        image = self._metadata.image
        errors: dict[TopicPartition, ErrorCode] = {}
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        for topic, index in effect.partitions:
            if topic not in image.topics or index not in image.topics[topic].partitions:
                errors[(topic, index)] = ErrorCode.NONE
                continue
            registration = image.partition(topic, index)
            if registration is None or registration.leader < 0:
                errors[(topic, index)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                by_leader[registration.leader].append((topic, index))
        answers = await asyncio.gather(*(self._send_to(leader, effect, partitions)
                                         for leader, partitions in by_leader.items()))
        for answer in answers:
            errors.update(answer)
        self.apply(self.coordinator.markers_written(effect.marker_id, errors, self._clock()))

    def _inter_broker_security(self) -> OutboundSecurity:
        """How markers and verifications reach other brokers: as followers fetch, over the
        inter-broker listener with its TLS and SASL."""
        return self._metadata.config.peer_security.get("inter_broker", PLAINTEXT)

    async def _send_to(self, leader: int, effect: WriteMarkers,
                       partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        failed = {partition: ErrorCode.NETWORK_EXCEPTION for partition in partitions}
        address = self._metadata.replica_endpoint(leader)
        if address is None:
            return {partition: ErrorCode.NOT_LEADER_OR_FOLLOWER for partition in partitions}
        connection = self._connections.get(leader)
        if connection is None or connection.address != address:
            connection = self._connections[leader] = RequestConnection(*address, self._inter_broker_security())
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in partitions:
            by_topic[topic].append(index)
        request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=effect.producer_id, producer_epoch=effect.producer_epoch, transaction_result=effect.commit,
            coordinator_epoch=effect.coordinator_epoch,
            topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=topic, partition_indexes=indexes)
                    for topic, indexes in by_topic.items()])])
        try:
            response = await asyncio.wait_for(connection.call(
                next(self._correlation), f"txn-coordinator-{self._metadata.node_id}", request,
                WRITE_TXN_MARKERS_VERSION), MARKER_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError, KafkaError, EOFError, asyncio.IncompleteReadError) as error:
            log.info("WriteTxnMarkers to broker %d failed (%s); will retry", leader, error)
            return failed
        assert isinstance(response, WriteTxnMarkersResponse)
        answered = {(topic.name, result.partition_index): ErrorCode(result.error_code)
                    for marker in response.markers for topic in marker.topics for result in topic.partitions}
        return {partition: answered.get(partition, ErrorCode.UNKNOWN_SERVER_ERROR) for partition in partitions}

    # -- verification (KIP-890 part 1)

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[TopicPartition], add: bool = False) -> dict[TopicPartition, ErrorCode]:
        """Is each partition in the producer's ongoing transaction? Asked of the coordinator here
        or, with AddPartitionsToTxn v4 verifyOnly, of the broker that is; NONE where it is.
        `add` (transaction protocol v2, KIP-890 part 2): add the partitions to the transaction
        instead of only asking (v4 without verifyOnly), NONE once the coordinator wrote them."""
        image = self._metadata.image
        registration = image.partition(TRANSACTION_TOPIC, self.coordinator.partition_for(transactional_id))
        if registration is None or registration.leader < 0:
            return {partition: ErrorCode.COORDINATOR_NOT_AVAILABLE for partition in partitions}
        if registration.leader == self._metadata.node_id:
            if add:
                result = await self.park(lambda token: self.coordinator.add_partitions(
                    token, transactional_id=transactional_id, producer_id=producer_id,
                    producer_epoch=producer_epoch, partitions=partitions, now_ms=self._clock()))
                return {partition: result.error for partition in partitions}
            return self.coordinator.verify_partitions(transactional_id=transactional_id, producer_id=producer_id,
                                                      producer_epoch=producer_epoch, partitions=partitions)
        address = self._metadata.replica_endpoint(registration.leader)
        if address is None:
            return {partition: ErrorCode.COORDINATOR_NOT_AVAILABLE for partition in partitions}
        connection = self._verifiers.get(registration.leader)
        if connection is None or connection.address != address:
            connection = self._verifiers[registration.leader] = RequestConnection(*address,
                                                                                  self._inter_broker_security())
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in partitions:
            by_topic[topic].append(index)
        request = AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=not add, topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=indexes)
                                      for topic, indexes in by_topic.items()])])
        try:
            response = await asyncio.wait_for(connection.call(
                next(self._correlation), f"txn-verifier-{self._metadata.node_id}", request,
                ADD_PARTITIONS_VERIFY_VERSION), MARKER_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError, KafkaError, EOFError, asyncio.IncompleteReadError) as error:
            log.info("verifying a transaction with broker %d failed: %s", registration.leader, error)
            return {partition: ErrorCode.NETWORK_EXCEPTION for partition in partitions}
        assert isinstance(response, AddPartitionsToTxnResponse)
        answered = {(topic.name, result.partition_index): ErrorCode(result.partition_error_code)
                    for txn in response.results_by_transaction for topic in txn.topic_results
                    for result in topic.results_by_partition}
        top = ErrorCode(response.error_code)
        return {partition: top if top else answered.get(partition, ErrorCode.UNKNOWN_SERVER_ERROR)
                for partition in partitions}

    # -- __transaction_state

    async def ensure_topic(self) -> CreateTopicResult | None:
        """Create `__transaction_state` the first time a transaction coordinator is looked for,
        as Kafka does; the replication factor and min ISR are capped to the registered brokers."""
        if TRANSACTION_TOPIC in self._metadata.image.topics:
            return None
        config = self._config
        brokers = max(1, len(self._metadata.image.brokers))
        replicas = min(config.get("transaction.state.log.replication.factor"), brokers)
        min_isr = min(config.get("transaction.state.log.min.isr"), replicas)
        topic = CreatableTopic(TRANSACTION_TOPIC, config.get("transaction.state.log.num.partitions"), replicas,
                               configs={"cleanup.policy": "compact", "compression.type": "uncompressed",
                                        "min.insync.replicas": str(min_isr), "unclean.leader.election.enable": "false",
                                        "segment.bytes": str(config.get("transaction.state.log.segment.bytes"))})
        (result,) = await self._controller.create_topics([topic])
        if result.error == ErrorCode.TOPIC_ALREADY_EXISTS:
            return None
        if result.error:
            log.error("creating %s failed: %s", TRANSACTION_TOPIC, result.message)
        else:
            log.info("created %s with %d partition(s), replication factor %d", TRANSACTION_TOPIC,
                     result.num_partitions, replicas)
        return result

    def sync_leadership(self) -> None:
        """Load the partitions this broker leads (again when their leader epoch moved on); unload
        those it lost."""
        topic = self._metadata.image.topics.get(TRANSACTION_TOPIC)
        led: dict[int, int] = {}
        if topic is not None:
            led = {index: registration.leader_epoch for index, registration in topic.partitions.items()
                   if registration.leader == self._metadata.node_id}
        effects: list[Effect] = []
        now_ms = self._clock()
        for index in sorted(set(self._loaded) - set(led)):
            del self._loaded[index]
            effects.extend(self.coordinator.unload_partition(index, now_ms))
        for index, epoch in sorted(led.items()):
            if self._loaded.get(index) == epoch:
                continue
            partition = self._partitions.partition(TRANSACTION_TOPIC, index)
            if partition is None:
                continue
            self._loaded[index] = epoch
            self.coordinator.begin_load(index)
            effects.extend(self.coordinator.load_partition(index, epoch, log_records(partition.log), now_ms))
        self.apply(effects)

    def close(self) -> None:
        self._timer.cancel()
        for future in self._parked.values():
            future.cancel()
        for task in self._tasks:
            task.cancel()
        for connection in [*self._connections.values(), *self._verifiers.values()]:
            connection.close()


def client_error(error: ErrorCode, version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED as a request at `version` understands it: versions before `fenced_since`
    predate the code, and Kafka answers them INVALID_PRODUCER_EPOCH, which they handle the same way."""
    if error is ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
