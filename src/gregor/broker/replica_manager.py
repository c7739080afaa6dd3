"""Replication between brokers: the asyncio edge of `gregor.replication` (Kafka's
ReplicaManager, ReplicaFetcherManager and AlterPartitionManager).

Each hosted `Partition` decides; this carries out its effects:

- `SendFetch` / `SendOffsetsForLeaderEpoch` go to the leader through one fetcher link per leader
  broker. Every partition that wants to fetch from that leader rides in one Fetch request
  (replica id = this broker, topic ids, v13 so that diverging epochs come back), one request in
  flight at a time, as Kafka's replica fetcher thread does. A link that cannot reach the leader
  answers its partitions with NETWORK_EXCEPTION, which they retry after replica.fetch.backoff.ms.
- `ProposeIsr` goes to the active controller as AlterPartition, batched like Kafka's
  AlterPartitionManager; each answer goes back to its partition.
- `ProduceCompleted` answers the waiting acks=all produce (its token is an asyncio future).

A tick every `TICK_S` lets partitions shrink the ISR (replica.lag.time.max.ms), time out
produces, resend overdue proposals and schedule their next fetch.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from typing import Any, Iterable, Mapping

from gregor.broker.controller_channel import answer_as
from gregor.broker.events import BrokerEvents
from gregor.broker.peer_channel import RequestConnection
from gregor.broker.services import ControllerGateway, MetadataView
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import DecodeError, KafkaError
from gregor.protocol.messages import FetchRequest, FetchResponse, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from gregor.protocol.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from gregor.replication.config import ReplicationConfig
from gregor.replication.effects import Effect, ProduceCompleted, ProposeIsr, SendFetch, SendOffsetsForLeaderEpoch
from gregor.replication.partition import Partition

log = logging.getLogger("gregor.replication")

TICK_S = 0.1
FETCH_VERSION = 13
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
ALTER_PARTITION_VERSION = 2
REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 * 1024 * 1024
_UNREACHABLE = (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, DecodeError)

Key = tuple[str, int]


def now_ms() -> int:
    return int(time.time() * 1000)


def replication_config(config: Any) -> ReplicationConfig:
    """Kafka's replica.* broker keys as the replication layer's settings."""
    return ReplicationConfig(replica_lag_time_max_ms=config.get("replica.lag.time.max.ms"),
                             replica_fetch_max_bytes=config.get("replica.fetch.max.bytes"),
                             replica_fetch_backoff_ms=config.get("replica.fetch.backoff.ms"),
                             replica_fetch_wait_max_ms=config.get("replica.fetch.wait.max.ms"),
                             replica_socket_timeout_ms=config.get("replica.socket.timeout.ms"))


class ReplicaManager:
    """`hosted` is the broker's map of the partitions it hosts, which it keeps current."""

    def __init__(self, config: ReplicationConfig, hosted: Mapping[Key, Partition], metadata: MetadataView,
                 controller: ControllerGateway, events: BrokerEvents) -> None:
        self.config = config
        self._hosted = hosted
        self.metadata = metadata
        self._controller = controller
        self._events = events
        self._links: dict[int, _FetcherLink] = {}
        self._proposals: dict[Key, tuple[Partition, ProposeIsr]] = {}
        self._proposals_ready = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(self._tick_loop()), asyncio.ensure_future(self._propose_loop())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for link in self._links.values():
            await link.close()
        self._links.clear()

    def apply(self, partition: Partition, effects: Iterable[Effect]) -> None:
        """Carry out what `partition` asked for."""
        for effect in effects:
            if isinstance(effect, ProduceCompleted):
                if isinstance(effect.token, asyncio.Future) and not effect.token.done():  # the broker's tokens
                    effect.token.set_result(effect.error)
            elif isinstance(effect, (SendFetch, SendOffsetsForLeaderEpoch)):
                self._link(effect.leader_id).add(partition, effect)
            elif isinstance(effect, ProposeIsr):
                log.info("%s-%d: leader %d proposes ISR %s (was %s)", partition.topic, partition.index,
                         self.metadata.node_id, list(effect.isr), partition.isr)
                self._proposals[(partition.topic, partition.index)] = (partition, effect)
                self._proposals_ready.set()

    def _link(self, leader_id: int) -> _FetcherLink:
        link = self._links.get(leader_id)
        if link is None:
            link = self._links[leader_id] = _FetcherLink(self, leader_id)
        return link

    def current(self, partition: Partition) -> bool:
        """Whether `partition` is still the one hosted (not deleted or re-created meanwhile)."""
        return self._hosted.get((partition.topic, partition.index)) is partition

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            current = now_ms()
            for partition in list(self._hosted.values()):
                self.apply(partition, partition.tick(current))

    async def _propose_loop(self) -> None:
        while True:
            await self._proposals_ready.wait()
            self._proposals_ready.clear()
            proposals, self._proposals = self._proposals, {}
            await self._send_proposals(list(proposals.values()))

    async def _send_proposals(self, proposals: list[tuple[Partition, ProposeIsr]]) -> None:
        by_topic: dict[uuid.UUID, list[AlterPartitionRequest.PartitionData]] = {}
        for partition, proposal in proposals:
            by_topic.setdefault(partition.topic_id, []).append(AlterPartitionRequest.PartitionData(
                partition_index=partition.index, leader_epoch=proposal.leader_epoch, new_isr=list(proposal.isr),
                partition_epoch=proposal.partition_epoch))
        request = AlterPartitionRequest(broker_id=self.metadata.node_id, broker_epoch=self.metadata.broker_epoch,
                                        topics=[AlterPartitionRequest.TopicData(topic_id=topic_id, partitions=parts)
                                                for topic_id, parts in by_topic.items()])
        answers: dict[tuple[uuid.UUID, int], AlterPartitionResponse.PartitionData] = {}
        sizes_before = [len(partition.isr) for partition, _ in proposals]  # the answer may race the metadata
        try:
            response = answer_as(AlterPartitionResponse, await self._controller.send_to_controller(
                request, ALTER_PARTITION_VERSION, self.config.replica_socket_timeout_ms / 1000))
            error = ErrorCode(response.error_code)
            answers = {(topic.topic_id, answer.partition_index): answer
                       for topic in response.topics for answer in topic.partitions}
        except KafkaError as failure:
            error = ErrorCode(failure.code)
        current = now_ms()
        for (partition, proposal), size_before in zip(proposals, sizes_before):
            found = answers.get((partition.topic_id, partition.index))
            code = ErrorCode(found.error_code) if found is not None else error or ErrorCode.UNKNOWN_SERVER_ERROR
            if found is not None and code == ErrorCode.NONE:
                answer = found
                self._events.isr_changed(partition.topic, partition.index, size_before, len(answer.isr))
            else:
                log.info("%s-%d: ISR change to %s not accepted: %s", partition.topic, partition.index,
                         list(proposal.isr), code.name)
                answer = AlterPartitionResponse.PartitionData(partition_index=partition.index)
            if self.current(partition):
                self.apply(partition, partition.on_alter_partition_response(
                    proposal.request_id, code, answer.leader_epoch, answer.partition_epoch, tuple(answer.isr), current))


class _FetcherLink:
    """Fetches from one leader broker for every partition that follows it here."""

    def __init__(self, manager: ReplicaManager, leader_id: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self._fetches: dict[Key, tuple[Partition, SendFetch]] = {}
        self._epoch_asks: dict[Key, tuple[Partition, SendOffsetsForLeaderEpoch]] = {}
        self._ready = asyncio.Event()
        self._connection: RequestConnection | None = None
        self._correlation_ids = itertools.count(1)
        self._task = asyncio.ensure_future(self._run())

    def add(self, partition: Partition, effect: SendFetch | SendOffsetsForLeaderEpoch) -> None:
        key = (partition.topic, partition.index)
        if isinstance(effect, SendFetch):
            self._fetches[key] = (partition, effect)
        else:
            self._epoch_asks[key] = (partition, effect)
        self._ready.set()

    async def close(self) -> None:
        self._task.cancel()
        if self._connection is not None:
            await self._connection.wait_closed()

    async def _run(self) -> None:
        metadata = self.manager.metadata
        config = self.manager.config
        while True:
            await self._ready.wait()
            self._ready.clear()
            asks, self._epoch_asks = self._epoch_asks, {}
            fetches, self._fetches = self._fetches, {}
            address = metadata.replica_endpoint(self.leader_id)
            try:
                if address is None:
                    raise OSError(f"broker {self.leader_id} has no {metadata.config.inter_broker_listener} endpoint")
                connection = self._connection
                if connection is None or connection.address != address:
                    if connection is not None:
                        await connection.wait_closed()
                    connection = self._connection = RequestConnection(*address)
                timeout_s = (config.replica_socket_timeout_ms + config.replica_fetch_wait_max_ms) / 1000
                if asks:
                    self._answer_asks(asks, await asyncio.wait_for(self._call(
                        connection, self._epoch_request(asks), OFFSET_FOR_LEADER_EPOCH_VERSION), timeout_s))
                if fetches:
                    self._answer_fetches(fetches, await asyncio.wait_for(
                        self._call(connection, self._fetch_request(fetches), FETCH_VERSION), timeout_s))
            except _UNREACHABLE as error:
                log.debug("replica fetcher %d -> %d: %s", metadata.node_id, self.leader_id, error)
                self._unreachable(asks, fetches)

    async def _call(self, connection: RequestConnection, request: Any, version: int) -> Any:
        client_id = f"replica-fetcher-{self.manager.metadata.node_id}"
        return await connection.call(next(self._correlation_ids), client_id, request, version)

    def _fetch_request(self, fetches: dict[Key, tuple[Partition, SendFetch]]) -> FetchRequest:
        config = self.manager.config
        by_topic: dict[uuid.UUID, list[FetchRequest.FetchPartition]] = {}
        for partition, effect in fetches.values():
            by_topic.setdefault(partition.topic_id, []).append(effect.partition)
        return FetchRequest(replica_id=self.manager.metadata.node_id, max_wait_ms=config.replica_fetch_wait_max_ms,
                            min_bytes=1, max_bytes=REPLICA_FETCH_RESPONSE_MAX_BYTES, isolation_level=0,
                            session_id=0, session_epoch=-1,
                            topics=[FetchRequest.FetchTopic(topic_id=topic_id, partitions=partitions)
                                    for topic_id, partitions in by_topic.items()])

    def _answer_fetches(self, fetches: dict[Key, tuple[Partition, SendFetch]], response: FetchResponse) -> None:
        answers = {(topic.topic_id, data.partition_index): data
                   for topic in response.responses for data in topic.partitions}
        current = now_ms()
        for partition, effect in fetches.values():
            data = answers.get((partition.topic_id, partition.index))
            if data is None:
                data = FetchResponse.PartitionData(partition_index=partition.index,
                                                   error_code=response.error_code or ErrorCode.UNKNOWN_SERVER_ERROR)
            if self.manager.current(partition):
                self.manager.apply(partition, partition.on_fetch_response(effect.request_id, data, current))

    def _epoch_request(self, asks: dict[Key, tuple[Partition, SendOffsetsForLeaderEpoch]]) -> OffsetForLeaderEpochRequest:
        by_topic: dict[str, list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]] = {}
        for partition, effect in asks.values():
            by_topic.setdefault(partition.topic, []).append(effect.partition)
        return OffsetForLeaderEpochRequest(replica_id=self.manager.metadata.node_id, topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=topic, partitions=partitions)
            for topic, partitions in by_topic.items()])

    def _answer_asks(self, asks: dict[Key, tuple[Partition, SendOffsetsForLeaderEpoch]],
                     response: OffsetForLeaderEpochResponse) -> None:
        answers = {(topic.topic, data.partition): data for topic in response.topics for data in topic.partitions}
        current = now_ms()
        for key, (partition, effect) in asks.items():
            data = answers.get(key) or OffsetForLeaderEpochResponse.EpochEndOffset(
                partition=partition.index, error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
            if self.manager.current(partition):
                self.manager.apply(partition, partition.on_offsets_for_leader_epoch_response(
                    effect.request_id, data, current))

    def _unreachable(self, asks: dict[Key, tuple[Partition, SendOffsetsForLeaderEpoch]],
                     fetches: dict[Key, tuple[Partition, SendFetch]]) -> None:
        """The leader could not be asked: each partition retries after its backoff."""
        current = now_ms()
        for partition, effect in asks.values():
            if self.manager.current(partition):
                self.manager.apply(partition, partition.on_offsets_for_leader_epoch_response(
                    effect.request_id, OffsetForLeaderEpochResponse.EpochEndOffset(
                        partition=partition.index, error_code=ErrorCode.NETWORK_EXCEPTION), current))
        for partition, fetch in fetches.values():
            if self.manager.current(partition):
                self.manager.apply(partition, partition.on_fetch_response(
                    fetch.request_id, FetchResponse.PartitionData(partition_index=partition.index,
                                                                   error_code=ErrorCode.NETWORK_EXCEPTION), current))
