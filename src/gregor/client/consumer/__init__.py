"""Gregor's consumer: `Consumer`, its records, offsets and rebalance listener."""

from gregor.client.consumer.consumer import (
    Consumer, ConsumerRebalanceListener, OffsetAndMetadata, OffsetAndTimestamp, WakeupException,
)
from gregor.client.consumer.fetcher import RecordDeserializationError
from gregor.client.consumer.batch_decoder import RecordColumns
from gregor.client.consumer.records import ConsumerRecord, ConsumerRecords, RecordChunk

__all__ = [
    "Consumer", "ConsumerRebalanceListener", "ConsumerRecord", "ConsumerRecords", "OffsetAndMetadata",
    "OffsetAndTimestamp", "RecordChunk", "RecordColumns", "RecordDeserializationError", "WakeupException",
]
