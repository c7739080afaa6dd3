"""What `Consumer.poll` hands over: records, grouped by partition in the order they were fetched;
and what `Consumer.poll_columns` hands over to bulk readers: the same records as column chunks."""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from gregor.client.consumer.batch_decoder import RecordColumns
from gregor.client.network import TopicPartition

CREATE_TIME, LOG_APPEND_TIME = 0, 1


class ConsumerRecord:
    """One record with its position; key and value as the deserializers returned them.

    `headers` is a list of (name, bytes or None); a record without headers gets its (empty)
    list only when `headers` is first read, which most readers never do."""

    __slots__ = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "_headers",
                 "leader_epoch", "serialized_key_size", "serialized_value_size")

    def __init__(self, topic: str, partition: int, offset: int, timestamp: int, timestamp_type: int,
                 key: Any, value: Any, headers: list[tuple[str, bytes | None]] | None, leader_epoch: int | None,
                 serialized_key_size: int, serialized_value_size: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self._headers = headers
        self.leader_epoch = leader_epoch
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    @property
    def headers(self) -> list[tuple[str, bytes | None]]:
        headers = self._headers
        if headers is None:
            headers = self._headers = []
        return headers

    @headers.setter
    def headers(self, headers: list[tuple[str, bytes | None]]) -> None:
        self._headers = headers

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __repr__(self) -> str:
        return (f"ConsumerRecord(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
                f"timestamp={self.timestamp}, key={self.key!r}, value={self.value!r})")


class ConsumerRecords:
    """The records of one poll: iterate them all, or per partition with `records(tp)`."""

    __slots__ = ("_by_partition",)

    def __init__(self, by_partition: dict[TopicPartition, list[ConsumerRecord]] | None = None) -> None:
        self._by_partition = by_partition or {}

    def records(self, topic_partition: tuple[str, int]) -> list[ConsumerRecord]:
        return self._by_partition.get(TopicPartition(*topic_partition), [])

    def partitions(self) -> list[TopicPartition]:
        return list(self._by_partition)

    def count(self) -> int:
        return sum(len(records) for records in self._by_partition.values())

    __len__ = count

    def __bool__(self) -> bool:
        return bool(self._by_partition)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        return itertools.chain.from_iterable(self._by_partition.values())

    def __repr__(self) -> str:
        return f"<ConsumerRecords {self.count()} records from {len(self._by_partition)} partitions>"


class RecordChunk:
    """Consecutive records of one partition with one timestamp type, column by column:
    `columns.offsets`, `.timestamps`, `.keys`, `.values` (raw bytes or None) and `.headers`.
    `leader_epoch` is the epoch of the last batch in the chunk (None when unknown)."""

    __slots__ = ("topic_partition", "timestamp_type", "leader_epoch", "columns")

    def __init__(self, topic_partition: TopicPartition, timestamp_type: int, leader_epoch: int | None,
                 columns: RecordColumns) -> None:
        self.topic_partition = topic_partition
        self.timestamp_type = timestamp_type
        self.leader_epoch = leader_epoch
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns)

    def __repr__(self) -> str:
        return (f"<RecordChunk {self.topic_partition.topic}-{self.topic_partition.partition} "
                f"{len(self.columns)} records from offset {self.columns.offsets[0] if self.columns else None}>")
