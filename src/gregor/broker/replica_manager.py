"""Replication between brokers: the asyncio edge of `gregor.replication` (Kafka's
ReplicaManager, ReplicaFetcherManager and AlterPartitionManager).

Each hosted `Partition` decides; this carries out its effects:

- `SendFetch` / `SendOffsetsForLeaderEpoch` go to the replication layer's `FetcherLinks`, which
  puts every partition that follows the same leader into one request, one in flight per leader,
  as Kafka's replica fetcher thread does (the simulator drives the same links). This sends what
  the links have ready on one connection per leader (Fetch v13, so that diverging epochs come
  back; a `PeerLink`, which hands each answer on in the callback that read it, so the partitions'
  next fetch leaves from there) and hands them the answers; a leader that cannot be reached within
  replica.socket.timeout.ms + replica.fetch.wait.max.ms is reported as a failure, which the
  partitions retry after replica.fetch.backoff.ms.
- `ProposeIsr` goes to the active controller as AlterPartition, batched like Kafka's
  AlterPartitionManager; each answer goes back to its partition.
- `ProduceCompleted` answers the waiting acks=all produce (its token is an asyncio future, or a
  callable given the outcome: Produce's, which answers without a turn of the loop).

Partitions have timers of their own (ISR shrink after replica.lag.time.max.ms, acks=all
timeouts, overdue proposals, a follower's fetch backoff): after every event on a partition this
asks it for its next deadline (`Partition.next_deadline`), keeps one deadline per partition, and
arms one loop timer for the earliest (`DeadlineTimer`); only the partitions due are ticked.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from typing import Any, Iterable, Mapping

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.controller_channel import answer_as
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.events import BrokerEvents
from gregor.broker.peer_channel import PLAINTEXT, PeerLink
from gregor.broker.services import ControllerGateway, MetadataView
from gregor.coordinator.deadlines import DeadlineQueue
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import FetchRequest
from gregor.protocol.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from gregor.replication.config import ReplicationConfig
from gregor.replication.effects import Effect, ProduceCompleted, ProposeIsr, SendFetch, SendOffsetsForLeaderEpoch
from gregor.replication.fetcher_links import FetcherLinks, Outgoing
from gregor.replication.partition import Partition

log = logging.getLogger("gregor.replication")

FETCH_VERSION = 13
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
ALTER_PARTITION_VERSION = 2

Key = tuple[str, int]


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
                 controller: ControllerGateway, events: BrokerEvents, clock: Clock = wall_clock_ms) -> None:
        self.config = config
        self._clock = clock
        self._hosted = hosted
        self.metadata = metadata
        self._controller = controller
        self._events = events
        self._links = FetcherLinks(metadata.node_id, config.replica_fetch_wait_max_ms, self.current)
        self._connections: dict[int, PeerLink] = {}
        self._in_flight: dict[int, Outgoing] = {}  # correlation id -> the link request it carries
        self._closed = False
        self._send_scheduled = False
        self._correlation_ids = itertools.count(1)
        self._proposals: dict[Key, tuple[Partition, ProposeIsr]] = {}
        self._proposals_ready = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._deadlines: DeadlineQueue[Partition] = DeadlineQueue()
        self._timer = DeadlineTimer(clock, self._tick_due)

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(self._propose_loop())]

    async def close(self) -> None:
        self._timer.cancel()
        self._closed = True
        self._in_flight.clear()
        for task in self._tasks:
            task.cancel()
        for link in self._connections.values():
            link.close()
        self._connections.clear()

    def apply(self, partition: Partition, effects: Iterable[Effect]) -> None:
        """Carry out what `partition` asked for."""
        self._carry_out(partition, effects)
        self._links.check_following(partition)
        self._schedule_send()
        self.reschedule(partition)

    def _carry_out(self, partition: Partition, effects: Iterable[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, ProduceCompleted):
                token = effect.token
                if isinstance(token, asyncio.Future):  # the broker's tokens: a future, or a callable (Produce's)
                    if not token.done():
                        token.set_result(effect.error)
                elif callable(token):
                    token(effect.error)
            elif isinstance(effect, (SendFetch, SendOffsetsForLeaderEpoch)):
                self._links.add(partition, effect)
            elif isinstance(effect, ProposeIsr):
                log.info("%s-%d: leader %d proposes ISR %s (was %s)", partition.topic, partition.index,
                         self.metadata.node_id, list(effect.isr), partition.isr)
                self._proposals[partition.key] = (partition, effect)
                self._proposals_ready.set()

    def reschedule(self, partition: Partition) -> None:
        """Take the partition's next deadline after an event on it (every `apply` does; an
        append, which moves the log end that followers are measured against, must too).

        Only an earlier deadline is taken at once. A later one (a follower caught up again,
        which happens on nearly every fetch) waits until the earlier comes: the partition is
        ticked then for nothing, and rescheduled at its real deadline."""
        if not self.current(partition):
            return
        deadline = partition.next_deadline(self._clock())
        scheduled = self._deadlines.deadline(partition)
        if deadline is None or (scheduled is not None and scheduled <= deadline):
            return
        self._deadlines.schedule(partition, deadline)
        self._timer.arm(deadline)

    def _tick_due(self, now_ms: int) -> None:
        due = []
        while (partition := self._deadlines.pop_due(now_ms)) is not None:
            due.append(partition)
        for partition in due:
            if self.current(partition):
                self.apply(partition, partition.tick(now_ms))
        self._timer.arm(self._deadlines.next_deadline())

    def _schedule_send(self) -> None:
        """Send what the links have ready once the current step is done, so that every partition
        asking in it rides in one request (after an answer, all the partitions it carried ask again)."""
        if self._links.has_ready() and not self._send_scheduled:
            self._send_scheduled = True
            asyncio.get_running_loop().call_soon(self._send_ready)

    def _send_ready(self) -> None:
        self._send_scheduled = False
        if self._closed:
            return
        for outgoing in self._links.ready():
            self._send(outgoing)

    def _send(self, outgoing: Outgoing) -> None:
        """One link request to its leader; the answer, or the failure to get one, goes back to the
        links from the connection's callbacks."""
        address = self.metadata.replica_endpoint(outgoing.leader_id)
        if address is None:
            log.debug("replica fetcher %d -> %d: no %s endpoint", self.metadata.node_id, outgoing.leader_id,
                      self.metadata.config.inter_broker_listener)
            asyncio.get_running_loop().call_soon(self._on_failure, [outgoing])
            return
        link = self._connections.get(outgoing.leader_id)
        if link is None or link.address != address:
            if link is not None:
                link.close()
            link = self._connections[outgoing.leader_id] = PeerLink(
                address, f"replica-fetcher-{self.metadata.node_id}", self._on_response, self._link_failed,
                self.metadata.config.peer_security.get("inter_broker", PLAINTEXT))
        correlation_id = next(self._correlation_ids)
        self._in_flight[correlation_id] = outgoing
        version = FETCH_VERSION if isinstance(outgoing.request, FetchRequest) else OFFSET_FOR_LEADER_EPOCH_VERSION
        link.send(correlation_id, outgoing.request, version,
                  (self.config.replica_socket_timeout_ms + self.config.replica_fetch_wait_max_ms) / 1000)

    def _on_response(self, correlation_id: int, response: Any) -> None:
        outgoing = self._in_flight.pop(correlation_id, None)
        if outgoing is None:
            return
        for partition, effects in self._links.on_response(outgoing.leader_id, outgoing.request_id, response,
                                                          self._clock()):
            self._carry_out(partition, effects)  # their next fetches are sent below, not scheduled each
            self.reschedule(partition)
        if self._links.has_ready():  # every partition the answer carried has asked again: at once
            self._send_ready()

    def _link_failed(self, correlation_ids: list[int]) -> None:
        self._on_failure([self._in_flight.pop(cid) for cid in correlation_ids if cid in self._in_flight])

    def _on_failure(self, failed: list[Outgoing]) -> None:
        if not failed:
            return
        now_ms = self._clock()
        for outgoing in failed:
            log.debug("replica fetcher %d -> %d: no answer", self.metadata.node_id, outgoing.leader_id)
            for partition, effects in self._links.on_failure(outgoing.leader_id, outgoing.request_id, now_ms):
                self.apply(partition, effects)
        self._schedule_send()

    def current(self, partition: Partition) -> bool:
        """Whether `partition` is still the one hosted (not deleted or re-created meanwhile)."""
        return self._hosted.get(partition.key) is partition

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
        current = self._clock()
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

