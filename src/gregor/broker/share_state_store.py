"""Where share-partition state is persisted: the compacted internal topic `__share_group_state`.

Gregor's documented equivalent of Kafka's share coordinator (docs/share-groups.md): the state of
group G on topic-partition T-p is one snapshot record (`coordinator.share.share_state_records`)
in partition `abs(hash("G:topicId:p")) % share.coordinator.state.topic.num.partitions`, written
with acks=all, so a restarted broker, or the next leader of that partition, reads the latest
record of each key back. The leader of T-p (where the share-partition lives) reads and writes it
through the leader of the state partition: directly when that is this broker, else with
ReadShareGroupState / WriteShareGroupState (`serve_read`, `serve_write` answer those). The
group's coordinator changes where a group starts on a partition, or forgets it, the same way
with InitializeShareGroupState / DeleteShareGroupState, and reads start offsets with
ReadShareGroupStateSummary (`serve_initialize`, `serve_delete`, `serve_summary`); writes are
fenced by state epoch (`coordinator.share.state_fencing`). A state partition is read once, when
first needed, and kept in memory after that.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from typing import Any

from gregor.broker.clock import Clock
from gregor.broker.config import BrokerConfig
from gregor.broker.peer_channel import PLAINTEXT, RequestConnection
from gregor.broker.services import ControllerGateway, MetadataView, PartitionHost
from gregor.controller.operations import CreatableTopic
from gregor.coordinator.partitioning import java_string_hashcode, kafka_abs
from gregor.coordinator.share import share_state_records as records
from gregor.coordinator.share.record_state import RecordState
from gregor.coordinator.share.share_partition import ShareSnapshot, StateBatch
from gregor.coordinator.share.state_fencing import initialize_error, initialized, write_error
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import (
    DeleteShareGroupStateRequest, DeleteShareGroupStateResponse, InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse, ReadShareGroupStateRequest, ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse, WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from gregor.records.batch import iter_batches
from gregor.records.record import BatchBuilder, decode_records

log = logging.getLogger("gregor.share")

STATE_TOPIC = "__share_group_state"
REQUEST_TIMEOUT_S = 10.0
_CHUNK = 4 * 1024 * 1024
Key = tuple[str, uuid.UUID, int]
StateRequest = (ReadShareGroupStateRequest | WriteShareGroupStateRequest | InitializeShareGroupStateRequest
                | DeleteShareGroupStateRequest | ReadShareGroupStateSummaryRequest)


class ShareStateStore:
    def __init__(self, config: BrokerConfig, metadata: MetadataView, partitions: PartitionHost,
                 controller: ControllerGateway, clock: Clock) -> None:
        self._config = config
        self._metadata = metadata
        self._partitions = partitions
        self._controller = controller
        self._clock = clock
        self._loaded: dict[int, tuple[int, dict[Key, ShareSnapshot]]] = {}  # by index: (leader epoch, states)
        self._connections: dict[int, RequestConnection] = {}
        self._correlation_ids = itertools.count(1)

    def partition_for(self, key: Key) -> int:
        group_id, topic_id, index = key
        return kafka_abs(java_string_hashcode(f"{group_id}:{topic_id}:{index}")) % self._num_partitions()

    async def ensure_topic(self) -> None:
        """Create `__share_group_state` the first time a share group is used; as for
        `__transaction_state`, the replication factor and min ISR are capped to the registered brokers."""
        if STATE_TOPIC in self._metadata.image.topics:
            return
        segment_bytes = self._config.get("share.coordinator.state.topic.segment.bytes")
        brokers = max(1, len(self._metadata.image.brokers))
        replicas = min(self._config.get("share.coordinator.state.topic.replication.factor"), brokers)
        min_isr = min(self._config.get("share.coordinator.state.topic.min.isr"), replicas)
        topic = CreatableTopic(STATE_TOPIC, self._num_partitions(), replicas,
                               configs={"cleanup.policy": "compact", "compression.type": "producer",
                                        "min.insync.replicas": str(min_isr), "segment.bytes": str(segment_bytes)})
        (result,) = await self._controller.create_topics([topic])
        if result.error and result.error != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.error("creating %s failed: %s", STATE_TOPIC, result.message)

    def exists(self) -> bool:
        """Whether `__share_group_state` exists (without it no group has state anywhere)."""
        return STATE_TOPIC in self._metadata.image.topics

    def has_leader(self, key: Key) -> bool:
        """Whether the state partition of `key` has a leader to ask."""
        registration = self._metadata.image.partition(STATE_TOPIC, self.partition_for(key))
        return registration is not None and registration.leader >= 0

    # -- what a share-partition's leader asks

    async def read(self, key: Key) -> ShareSnapshot | None:
        """The persisted state of `key`, None when it has none (a start offset of -1: initialized
        with a state epoch but no start offset); KafkaError when the state partition's leader
        cannot be asked."""
        leader = self._leader_of(key)
        if leader == self._metadata.node_id:
            return self.serve_read(key)
        group_id, topic_id, index = key
        asked = ReadShareGroupStateRequest.PartitionData(partition=index, leader_epoch=-1)
        request = ReadShareGroupStateRequest(group_id=group_id, topics=[
            ReadShareGroupStateRequest.ReadStateData(topic_id=topic_id, partitions=[asked])])
        response = await self._call(leader, request)
        assert isinstance(response, ReadShareGroupStateResponse)
        found = response.results[0].partitions[0]
        log.info("share state of group %s on topic id %s partition %d read from broker %d (%s)", group_id, topic_id,
                 index, leader,
                 ErrorCode(found.error_code).name if found.error_code else f"start offset {found.start_offset}")
        if found.error_code:
            raise KafkaError(found.error_code, found.error_message or ErrorCode(found.error_code).name)
        if found.start_offset < 0 and found.state_epoch == 0 and not found.state_batches:
            return None
        return ShareSnapshot(found.start_offset, found.state_epoch, tuple(
            StateBatch(b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
            for b in found.state_batches))

    async def write(self, key: Key, snapshot: ShareSnapshot) -> ErrorCode:
        """Persist the snapshot as the latest state of `key` (acks=all); the error, if any."""
        try:
            leader = self._leader_of(key)
        except KafkaError as error:
            return ErrorCode(error.code)
        if leader == self._metadata.node_id:
            return await self.serve_write(key, snapshot)
        group_id, topic_id, index = key
        request = WriteShareGroupStateRequest(group_id=group_id, topics=[WriteShareGroupStateRequest.WriteStateData(
            topic_id=topic_id, partitions=[WriteShareGroupStateRequest.PartitionData(
                partition=index, state_epoch=snapshot.state_epoch, leader_epoch=-1,
                start_offset=snapshot.start_offset, state_batches=[
                    WriteShareGroupStateRequest.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                                           delivery_state=int(b.state), delivery_count=b.delivery_count)
                    for b in snapshot.batches])])])
        return await self._ask_code(leader, request, WriteShareGroupStateResponse)

    async def initialize(self, key: Key, state_epoch: int, start_offset: int) -> ErrorCode:
        """Start the group on the partition afresh at `start_offset` (-1: `share.auto.offset.reset`)
        in `state_epoch`, replacing any state of an earlier epoch; the error, if any."""
        try:
            leader = self._leader_of(key)
        except KafkaError as error:
            return ErrorCode(error.code)
        if leader == self._metadata.node_id:
            return await self.serve_initialize(key, state_epoch, start_offset)
        group_id, topic_id, index = key
        request = InitializeShareGroupStateRequest(group_id=group_id, topics=[
            InitializeShareGroupStateRequest.InitializeStateData(topic_id=topic_id, partitions=[
                InitializeShareGroupStateRequest.PartitionData(partition=index, state_epoch=state_epoch,
                                                               start_offset=start_offset)])])
        return await self._ask_code(leader, request, InitializeShareGroupStateResponse)

    async def delete(self, key: Key) -> ErrorCode:
        """Forget the group's state on the partition (a tombstone); the error, if any."""
        try:
            leader = self._leader_of(key)
        except KafkaError as error:
            return ErrorCode(error.code)
        if leader == self._metadata.node_id:
            return await self.serve_delete(key)
        group_id, topic_id, index = key
        request = DeleteShareGroupStateRequest(group_id=group_id, topics=[
            DeleteShareGroupStateRequest.DeleteStateData(topic_id=topic_id, partitions=[
                DeleteShareGroupStateRequest.PartitionData(partition=index)])])
        return await self._ask_code(leader, request, DeleteShareGroupStateResponse)

    async def summary(self, key: Key) -> tuple[int, int]:
        """(start offset, state epoch) of `key`, (-1, 0) when it has no state; KafkaError when
        the state partition's leader cannot be asked or refuses."""
        leader = self._leader_of(key)
        if leader == self._metadata.node_id:
            return self.serve_summary(key)
        group_id, topic_id, index = key
        request = ReadShareGroupStateSummaryRequest(group_id=group_id, topics=[
            ReadShareGroupStateSummaryRequest.ReadStateSummaryData(topic_id=topic_id, partitions=[
                ReadShareGroupStateSummaryRequest.PartitionData(partition=index, leader_epoch=-1)])])
        response = await self._call(leader, request)
        assert isinstance(response, ReadShareGroupStateSummaryResponse)
        found = response.results[0].partitions[0]
        if found.error_code:
            raise KafkaError(found.error_code, found.error_message or ErrorCode(found.error_code).name)
        return found.start_offset, found.state_epoch

    # -- what the state partition's leader answers

    def serve_read(self, key: Key) -> ShareSnapshot | None:
        loaded = self._load(self.partition_for(key))
        if loaded is None:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"this broker does not lead the {STATE_TOPIC} partition")
        return loaded.get(key)

    async def serve_write(self, key: Key, snapshot: ShareSnapshot) -> ErrorCode:
        loaded = self._load(self.partition_for(key))
        if loaded is None:
            return ErrorCode.NOT_COORDINATOR
        fenced = write_error(loaded.get(key), snapshot.state_epoch)
        if fenced:
            return fenced
        if snapshot.state_epoch == -1 and key in loaded:
            snapshot = ShareSnapshot(snapshot.start_offset, loaded[key].state_epoch, snapshot.batches)
        return await self._append(key, snapshot)

    async def serve_initialize(self, key: Key, state_epoch: int, start_offset: int) -> ErrorCode:
        loaded = self._load(self.partition_for(key))
        if loaded is None:
            return ErrorCode.NOT_COORDINATOR
        fenced = initialize_error(loaded.get(key), state_epoch)
        if fenced:
            return fenced
        return await self._append(key, initialized(state_epoch, start_offset))

    async def serve_delete(self, key: Key) -> ErrorCode:
        loaded = self._load(self.partition_for(key))
        if loaded is None:
            return ErrorCode.NOT_COORDINATOR
        if key not in loaded:
            return ErrorCode.NONE
        return await self._append(key, None)

    def serve_summary(self, key: Key) -> tuple[int, int]:
        snapshot = self.serve_read(key)
        return (-1, 0) if snapshot is None else (snapshot.start_offset, snapshot.state_epoch)

    async def _append(self, key: Key, snapshot: ShareSnapshot | None) -> ErrorCode:
        """Append the state of `key` (None: a tombstone) with acks=all; it is the state served
        from now on, whether or not the append is replicated in time."""
        index = self.partition_for(key)
        loaded = self._load(index)
        partition = self._partitions.partition(STATE_TOPIC, index)
        if loaded is None or partition is None:
            return ErrorCode.NOT_COORDINATOR
        builder = BatchBuilder()
        builder.append(self._clock(), records.encode_key(*key),
                       None if snapshot is None else records.encode_value(snapshot))
        try:
            info = partition.append_as_leader(memoryview(builder.build()), self._clock(), -1)
        except KafkaError as error:
            log.warning("writing share state of %s to %s-%d failed: %s", key, STATE_TOPIC, index, error)
            return ErrorCode(error.code)
        if snapshot is None:
            loaded.pop(key, None)
        else:
            loaded[key] = snapshot
        replicated: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self._partitions.on_leader_append(partition, partition.await_replication(
            info, replicated, self._clock(), self._config.get("offsets.commit.timeout.ms")))
        return await replicated

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()

    # -- internals

    def _leader_of(self, key: Key) -> int:
        registration = self._metadata.image.partition(STATE_TOPIC, self.partition_for(key))
        if registration is None or registration.leader < 0:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{STATE_TOPIC} has no leader for this state")
        return registration.leader

    async def _ask_code(self, node: int, request: StateRequest, response_type: type) -> ErrorCode:
        """The one partition's error code of a state request sent to `node`."""
        try:
            response = await self._call(node, request)
        except KafkaError as error:
            return ErrorCode(error.code)
        assert isinstance(response, response_type)
        answered: Any = response
        return ErrorCode(answered.results[0].partitions[0].error_code)

    async def _call(self, node: int, request: StateRequest) -> object:
        address = self._metadata.replica_endpoint(node)
        if address is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {node} has no inter-broker endpoint")
        connection = self._connections.get(node)
        if connection is None or connection.address != address:
            connection = self._connections[node] = RequestConnection(
                *address, self._metadata.config.peer_security.get("inter_broker", PLAINTEXT))
        try:
            call = connection.call(next(self._correlation_ids), f"broker-{self._metadata.node_id}", request, 0)
            return await asyncio.wait_for(call, REQUEST_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError, EOFError, asyncio.IncompleteReadError) as error:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {node}: {error!r}") from None

    def _num_partitions(self) -> int:
        topic = self._metadata.image.topics.get(STATE_TOPIC)
        if topic is not None:
            return len(topic.partitions)
        return int(self._config.get("share.coordinator.state.topic.num.partitions"))

    def _load(self, index: int) -> dict[Key, ShareSnapshot] | None:
        partition = self._partitions.partition(STATE_TOPIC, index)
        if partition is None or not partition.is_leader:
            self._loaded.pop(index, None)
            return None
        cached = self._loaded.get(index)
        if cached is not None and cached[0] == partition.leader_epoch:
            return cached[1]
        loaded: dict[Key, ShareSnapshot] = {}
        self._loaded[index] = (partition.leader_epoch, loaded)
        partition_log = partition.log
        offset, end = partition_log.log_start_offset, partition_log.log_end_offset
        while offset < end:
            data = partition_log.read_bytes(offset, _CHUNK, end)
            if not data:
                break
            for header, pos in iter_batches(data):
                offset = header.last_offset + 1
                if header.is_control:
                    continue
                for record in decode_records(data, pos, header, _CHUNK * 64):
                    if record.key is None:
                        continue
                    try:
                        key = records.decode_key(record.key)
                        if record.value is None:
                            loaded.pop(key, None)
                        else:
                            loaded[key] = records.decode_value(record.value)
                    except records.ShareStateFormatError as error:
                        log.warning("skipping an unreadable record of %s-%d: %s", STATE_TOPIC, index, error)
        return loaded
