"""Keys and values of `__transaction_state` records, byte-compatible with Apache Kafka.

A key is int16 version 0 then TransactionLogKey; a value is an int16 version then
TransactionLogValue: version 0 for the classic protocol, version 1 (flexible, with the previous
and next producer ids and the client's transaction version as tagged fields) for a transaction
of protocol v2, as Kafka 4.0 writes them. An Empty transaction has null partitions. A removed
transactional id is a tombstone (null value).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from gregor.protocol.messages.transaction_coordinator_records.transaction_log_key import TransactionLogKey
from gregor.protocol.messages.transaction_coordinator_records.transaction_log_value import TransactionLogValue
from gregor.protocol.primitives import Reader
from gregor.coordinator.transaction.state import TransactionState

KEY_VERSION = 0
_VERSION = struct.Struct(">h")

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class TransactionRecord:
    """What one `__transaction_state` value says about a transactional id."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


def encode_key(transactional_id: str) -> bytes:
    return _VERSION.pack(KEY_VERSION) + TransactionLogKey(transactional_id=transactional_id).encode(KEY_VERSION)


def encode_value(record: TransactionRecord) -> bytes:
    if record.state is TransactionState.EMPTY and record.partitions:
        raise ValueError("an Empty transaction has no partitions")
    version = 1 if record.client_transaction_version >= 2 else 0
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(record.partitions):
        by_topic.setdefault(topic, []).append(partition)
    partitions = None if record.state is TransactionState.EMPTY else [
        TransactionLogValue.PartitionsSchema(topic=topic, partition_ids=ids) for topic, ids in by_topic.items()]
    value = TransactionLogValue(
        producer_id=record.producer_id, previous_producer_id=record.previous_producer_id,
        next_producer_id=record.next_producer_id, producer_epoch=record.producer_epoch,
        transaction_timeout_ms=record.timeout_ms, transaction_status=record.state.id,
        transaction_partitions=partitions, transaction_last_update_timestamp_ms=record.last_update_ms,
        transaction_start_timestamp_ms=record.start_ms,
        client_transaction_version=record.client_transaction_version)
    return _VERSION.pack(version) + value.encode(version)


def decode_key(data: bytes) -> str | None:
    """The transactional id, or None for a key version this coordinator does not know.

    Raises DecodeError when the bytes do not hold the struct their version announces.
    """
    reader = Reader(data)
    version = reader.int16()
    if version != KEY_VERSION:
        return None
    return TransactionLogKey.decode(reader, version).transactional_id


def decode_value(data: bytes) -> TransactionRecord:
    """Raises DecodeError for malformed bytes, ValueError for an unknown version or state."""
    reader = Reader(data)
    version = reader.int16()
    if version not in (0, 1):
        raise ValueError(f"unknown TransactionLogValue version {version}")
    value = TransactionLogValue.decode(reader, version)
    partitions = frozenset((topic.topic, index) for topic in value.transaction_partitions or ()
                           for index in topic.partition_ids)
    return TransactionRecord(
        producer_id=value.producer_id, producer_epoch=value.producer_epoch,
        timeout_ms=value.transaction_timeout_ms, state=TransactionState.from_id(value.transaction_status),
        partitions=partitions, last_update_ms=value.transaction_last_update_timestamp_ms,
        start_ms=value.transaction_start_timestamp_ms, previous_producer_id=value.previous_producer_id,
        next_producer_id=value.next_producer_id, client_transaction_version=value.client_transaction_version)
