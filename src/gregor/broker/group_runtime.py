"""The broker's side of the group coordinator: parks requests, writes records, keeps the timer.

`gregor.coordinator.GroupCoordinator` is a sans-IO state machine. This module is the edge that
carries out its effects with the broker's clock, event loop and `__consumer_offsets` partition
logs: a parked request (JoinGroup, SyncGroup, OffsetCommit) is a future answered by a
`Respond`; an `AppendRecords` becomes one record batch appended to the partition (on a single
node it is committed as soon as it is appended, so `append_done` follows at once); one loop
timer fires `tick` at the coordinator's next deadline. Partitions are loaded from their logs
when this broker becomes their leader.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from typing import Awaitable, Callable, Iterable, Iterator, TypeVar

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.config import BrokerConfig
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.services import ControllerGateway, MetadataView, PartitionHost
from gregor.controller.operations import CreatableTopic, CreateTopicResult
from gregor.coordinator import AppendRecords, Effect, GroupCoordinator, GroupCoordinatorConfig, Respond
from gregor.coordinator.config import consumer_assignors
from gregor.metadata.group_configs import GROUP_RESOURCE
from gregor.metadata.replica_racks import replica_racks
from gregor.coordinator.consumer.group import TopicInfo
from gregor.coordinator.consumer.results import HeartbeatResult
from gregor.coordinator.results import JoinResult, OffsetCommitResult, SyncResult
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.records.batch import iter_batches
from gregor.records.record import BatchBuilder, decode_records
from gregor.storage.log import Log
from gregor.storage.producer_state import MAX_SEQUENCE

log = logging.getLogger("gregor.coordinator")

OFFSETS_TOPIC = "__consumer_offsets"
LOAD_CHUNK_BYTES = 4 * 1024 * 1024
R = TypeVar("R")
Parked = JoinResult | SyncResult | OffsetCommitResult | HeartbeatResult  # what a parked request is answered with
P = TypeVar("P", JoinResult, SyncResult, OffsetCommitResult, HeartbeatResult)


class GroupRuntime:
    def __init__(self, config: BrokerConfig, metadata: MetadataView, partitions: PartitionHost,
                 controller: ControllerGateway, clock: Clock = wall_clock_ms) -> None:
        self._config = config
        self._clock = clock
        self._metadata = metadata
        self._partitions = partitions
        self._controller = controller
        self.coordinator = GroupCoordinator(GroupCoordinatorConfig(
            group_min_session_timeout_ms=config.get("group.min.session.timeout.ms"),
            group_max_session_timeout_ms=config.get("group.max.session.timeout.ms"),
            group_initial_rebalance_delay_ms=config.get("group.initial.rebalance.delay.ms"),
            group_max_size=config.get("group.max.size"),
            offsets_retention_minutes=config.get("offsets.retention.minutes"),
            offsets_retention_check_interval_ms=config.get("offsets.retention.check.interval.ms"),
            offset_metadata_max_bytes=config.get("offset.metadata.max.bytes"),
            offsets_topic_num_partitions=config.get("offsets.topic.num.partitions"),
            group_consumer_session_timeout_ms=config.get("group.consumer.session.timeout.ms"),
            group_consumer_min_session_timeout_ms=config.get("group.consumer.min.session.timeout.ms"),
            group_consumer_max_session_timeout_ms=config.get("group.consumer.max.session.timeout.ms"),
            group_consumer_heartbeat_interval_ms=config.get("group.consumer.heartbeat.interval.ms"),
            group_consumer_min_heartbeat_interval_ms=config.get("group.consumer.min.heartbeat.interval.ms"),
            group_consumer_max_heartbeat_interval_ms=config.get("group.consumer.max.heartbeat.interval.ms"),
            group_consumer_max_size=config.get("group.consumer.max.size"),
            group_consumer_assignors=consumer_assignors(",".join(config.get("group.consumer.assignors"))),
        ), random.Random())
        self.coordinator.use_group_configs(
            lambda group_id: self._metadata.image.configs.get((GROUP_RESOURCE, group_id), {}))
        self._parked: dict[object, asyncio.Future[Parked]] = {}
        self._timer = DeadlineTimer(clock, lambda now_ms: self.apply(self.coordinator.tick(now_ms)))
        self._loaded: set[int] = set()

    # -- requests

    def park(self, call: Callable[[object], list[Effect]], answer: type[P],
             encode: Callable[[P], R]) -> R | Awaitable[R]:
        """Run a coordinator call that may answer later, with a result of type `answer`; the
        response, or an awaitable of it."""
        token = object()
        future: asyncio.Future[Parked] = asyncio.get_running_loop().create_future()
        self._parked[token] = future

        def encoded(result: Parked) -> R:
            if not isinstance(result, answer):
                raise TypeError(f"the coordinator answered {type(result).__name__}, not {answer.__name__}")
            return encode(result)

        self.apply(call(token))
        if future.done():
            return encoded(future.result())

        async def later() -> R:
            try:
                return encoded(await future)
            finally:
                self._parked.pop(token, None)

        return later()

    def apply(self, effects: Iterable[Effect]) -> None:
        """Carry out effects in order; those caused by carrying them out follow after."""
        pending = deque(effects)
        while pending:
            effect = pending.popleft()
            if isinstance(effect, Respond):
                future = self._parked.pop(effect.token, None)
                if future is not None and not future.done():
                    future.set_result(effect.result)
            elif isinstance(effect, AppendRecords):
                pending.extend(self._append(effect))
        self._arm_timer()

    def _append(self, effect: AppendRecords) -> list[Effect]:
        """Append the records. For a write the coordinator waits on (an append id), what its
        `append_done` returns when the append failed, or later once the high watermark passes
        the records (acks=all, as Kafka's coordinator writes, so a commit survives the loss of
        this leader)."""
        append_id = effect.append_id
        partition = self._partitions.partition(OFFSETS_TOPIC, effect.partition)
        if partition is None:
            return self._append_done(append_id, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        builder = BatchBuilder(compression=self._config.get("offsets.topic.compression.codec"),
                               producer_id=effect.producer_id, producer_epoch=effect.producer_epoch,
                               base_sequence=_next_sequence(partition.log, effect.producer_id, effect.producer_epoch),
                               is_transactional=effect.producer_id >= 0)
        for key, value in effect.records:
            builder.append(effect.timestamp_ms, key, value)
        try:
            info = partition.append_as_leader(memoryview(builder.build()), self._clock(), 1 if append_id is None else -1)
        except KafkaError as error:
            log.warning("appending %d group record(s) to %s-%d failed: %s", len(effect.records),
                        OFFSETS_TOPIC, effect.partition, error)
            return self._append_done(append_id, ErrorCode(error.code))
        if append_id is None:
            self._partitions.on_leader_append(partition)
            return []
        replicated: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self._partitions.on_leader_append(partition, partition.await_replication(
            info, replicated, self._clock(), self._config.get("offsets.commit.timeout.ms")))
        if replicated.done():
            return self._append_done(append_id, replicated.result())
        replicated.add_done_callback(lambda done: self.apply(self.coordinator.append_done(
            append_id, done.result(), self._clock())))
        return []

    def _append_done(self, append_id: int | None, error: ErrorCode) -> list[Effect]:
        return [] if append_id is None else self.coordinator.append_done(append_id, error, self._clock())

    def _arm_timer(self) -> None:
        self._timer.arm(self.coordinator.next_deadline())

    def close(self) -> None:
        self._timer.cancel()
        for future in self._parked.values():
            future.cancel()

    def transaction_completed(self, producer_id: int, partition: int, committed: bool) -> None:
        """A transaction's marker is replicated on `__consumer_offsets`-`partition` (the seam
        WriteTxnMarkers calls): the producer's pending TxnOffsetCommit offsets there become
        visible, or are dropped."""
        self.apply(self.coordinator.complete_transaction(partition, producer_id, committed, self._clock()))

    def forget_partitions(self, partitions: list[tuple[str, int]]) -> None:
        """Deleted topics take their committed offsets with them, as in Kafka."""
        self.apply(self.coordinator.on_partitions_deleted(partitions, self._clock()))

    # -- __consumer_offsets

    async def ensure_offsets_topic(self) -> CreateTopicResult | None:
        """Create `__consumer_offsets` the first time a coordinator is looked for, as Kafka does."""
        if OFFSETS_TOPIC in self._metadata.image.topics:
            return None
        config = self._config
        topic = CreatableTopic(OFFSETS_TOPIC, config.get("offsets.topic.num.partitions"),
                               config.get("offsets.topic.replication.factor"),
                               configs={"cleanup.policy": "compact", "compression.type": "producer",
                                        "segment.bytes": str(config.get("offsets.topic.segment.bytes"))})
        (result,) = await self._controller.create_topics([topic])
        if result.error == ErrorCode.TOPIC_ALREADY_EXISTS:
            return None
        if result.error:
            log.error("creating %s failed: %s", OFFSETS_TOPIC, result.message)
        else:
            log.info("created %s with %d partition(s)", OFFSETS_TOPIC, result.num_partitions)
        return result

    def sync_leadership(self) -> None:
        """Load the partitions this broker leads and has not loaded; unload those it lost. The
        coordinator also learns the topics (ids, partition counts) consumer groups assign from:
        the publisher calls this on every change of topics or partitions."""
        image = self._metadata.image
        self.coordinator.set_topics({name: TopicInfo(topic.topic_id, name, len(topic.partitions),
                                                     replica_racks(image, topic.partitions))
                                     for name, topic in image.topics.items()})
        topic = self._metadata.image.topics.get(OFFSETS_TOPIC)
        led = set()
        if topic is not None:
            led = {index for index, registration in topic.partitions.items()
                   if registration.leader == self._metadata.node_id}
        effects: list[Effect] = []
        for index in sorted(self._loaded - led):
            self._loaded.discard(index)
            effects.extend(self.coordinator.unload_partition(index, self._clock()))
        for index in sorted(led - self._loaded):
            partition = self._partitions.partition(OFFSETS_TOPIC, index)
            if partition is None:
                continue
            self._loaded.add(index)
            self.coordinator.begin_load(index)
            started = time.monotonic()
            open_transactions: dict[int, list[tuple[bytes, bytes | None]]] = {}
            records = log_records(partition.log, open_transactions)
            effects.extend(self.coordinator.load_partition(index, records, self._clock(), open_transactions))
            elapsed = time.monotonic() - started
            if elapsed > 0.5:
                log.info("loaded %s-%d in %.1f s", OFFSETS_TOPIC, index, elapsed)
        self.apply(effects)


def log_records(partition_log: Log, open_transactions: dict[int, list[tuple[bytes, bytes | None]]] | None = None
                ) -> Iterator[tuple[bytes, bytes | None]]:
    """(key, value) of every record of a coordinator partition, in order. A new leader reads to
    its log end, as Kafka's coordinator does: its followers truncate to its log, so what it holds
    past its high watermark (commits the old leader had not yet seen replicated) stays.

    With `open_transactions` (a dict to fill), records of transactional batches are held back
    per producer until the producer's marker: yielded there if it is a COMMIT, dropped if an
    ABORT; those of transactions still open at the end are left in the dict, by producer id."""
    held: dict[int, list[tuple[bytes, bytes | None]]] = {}
    offset = partition_log.log_start_offset
    end = partition_log.log_end_offset
    while offset < end:
        data = partition_log.read_bytes(offset, LOAD_CHUNK_BYTES, end)
        if not data:
            break
        for header, pos in iter_batches(data):
            offset = header.last_offset + 1
            records = [(record.key, record.value) for record in decode_records(data, pos, header, LOAD_CHUNK_BYTES * 64)
                       if record.key is not None]
            if header.is_control:
                pending = held.pop(header.producer_id, [])
                if records and _is_commit(records[0][0]):
                    yield from pending
            elif open_transactions is not None and header.is_transactional:
                held.setdefault(header.producer_id, []).extend(records)
            else:
                yield from records
    if open_transactions is not None:
        open_transactions.update(held)


def _next_sequence(partition_log: Log, producer_id: int, producer_epoch: int) -> int:
    """The sequence of a TxnOffsetCommit batch: the next of the producer's batches in this
    partition (its only writer there is this coordinator), 0 in a new epoch; -1 without a producer.
    Kafka writes these batches without a sequence and skips the sequence check for appends of
    coordinator origin; Gregor's log checks every producer batch, so the coordinator numbers them."""
    if producer_id < 0:
        return -1
    entry = partition_log.producer_state.producers.get(producer_id)
    if entry is None or entry.epoch != producer_epoch or entry.last_sequence < 0:
        return 0
    return (entry.last_sequence + 1) & MAX_SEQUENCE


def _is_commit(control_key: bytes) -> bool:
    """A control record's key: int16 version, int16 type (0 ABORT, 1 COMMIT)."""
    return len(control_key) >= 4 and int.from_bytes(control_key[2:4], "big", signed=True) == 1
