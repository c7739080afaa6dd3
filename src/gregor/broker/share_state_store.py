"""Where share-partition state is persisted: the compacted internal topic `__share_group_state`.

Gregor's documented equivalent of Kafka's share coordinator (docs/share-groups.md): the state of
group G on topic-partition T-p is one snapshot record (`coordinator.share.share_state_records`)
in partition `abs(hash("G:topicId:p")) % share.coordinator.state.topic.num.partitions`,
replicated like any partition, so a restarted broker reads the latest record of each key back.
A state partition is read once, when first needed, and kept in memory after that. This broker
writes and reads only the state partitions it leads; a share-partition whose state partition is
led elsewhere keeps its state in memory (the RPCs that reach another broker's state partition,
Kafka's Read/WriteShareGroupState, are not implemented yet).
"""

from __future__ import annotations

import logging
import uuid

from gregor.broker.clock import Clock
from gregor.broker.config import BrokerConfig
from gregor.broker.services import ControllerGateway, MetadataView, PartitionHost
from gregor.controller.operations import CreatableTopic
from gregor.coordinator.partitioning import java_string_hashcode, kafka_abs
from gregor.coordinator.share import share_state_records as records
from gregor.coordinator.share.share_partition import ShareSnapshot
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.records.batch import iter_batches
from gregor.records.record import BatchBuilder, decode_records

log = logging.getLogger("gregor.share")

STATE_TOPIC = "__share_group_state"
_CHUNK = 4 * 1024 * 1024
Key = tuple[str, uuid.UUID, int]


class ShareStateStore:
    def __init__(self, config: BrokerConfig, metadata: MetadataView, partitions: PartitionHost,
                 controller: ControllerGateway, clock: Clock) -> None:
        self._config = config
        self._metadata = metadata
        self._partitions = partitions
        self._controller = controller
        self._clock = clock
        self._loaded: dict[int, dict[Key, ShareSnapshot]] = {}

    def partition_for(self, key: Key) -> int:
        group_id, topic_id, index = key
        return kafka_abs(java_string_hashcode(f"{group_id}:{topic_id}:{index}")) % self._num_partitions()

    async def ensure_topic(self) -> None:
        """Create `__share_group_state` the first time a share group is used."""
        if STATE_TOPIC in self._metadata.image.topics:
            return
        topic = CreatableTopic(STATE_TOPIC, self._num_partitions(),
                               self._config.get("share.coordinator.state.topic.replication.factor"),
                               configs={"cleanup.policy": "compact", "compression.type": "producer",
                                        "segment.bytes": str(self._config.get("share.coordinator.state.topic.segment.bytes"))})
        (result,) = await self._controller.create_topics([topic])
        if result.error and result.error != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.error("creating %s failed: %s", STATE_TOPIC, result.message)

    def read(self, key: Key) -> ShareSnapshot | None:
        """The persisted state of `key`, None when there is none (or its state partition is not
        led here)."""
        index = self.partition_for(key)
        loaded = self._load(index)
        return None if loaded is None else loaded.get(key)

    def write(self, key: Key, snapshot: ShareSnapshot) -> bool:
        """Append the snapshot as the latest state of `key`; False when it could not be written
        here (the state partition is not led by this broker, or the append failed)."""
        index = self.partition_for(key)
        loaded = self._load(index)
        partition = self._partitions.partition(STATE_TOPIC, index)
        if loaded is None or partition is None:
            return False
        builder = BatchBuilder()
        builder.append(self._clock(), records.encode_key(*key), records.encode_value(snapshot))
        try:
            partition.append_as_leader(memoryview(builder.build()), self._clock(), 1)
        except KafkaError as error:
            log.warning("writing share state of %s to %s-%d failed: %s", key, STATE_TOPIC, index, error)
            return False
        self._partitions.on_leader_append(partition)
        loaded[key] = snapshot
        return True

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
        loaded = self._loaded.get(index)
        if loaded is None:
            loaded = self._loaded[index] = {}
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
