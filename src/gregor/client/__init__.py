"""Gregor's Python client for any Kafka-compatible cluster."""

from gregor.client.admin import AdminClient
from gregor.client.consumer import (
    Consumer, ConsumerRebalanceListener, ConsumerRecord, ConsumerRecords, OffsetAndMetadata, WakeupException,
)
from gregor.client.errors import (
    ClientErrorCode, IllegalStateError, InvalidProducerEpochError, KafkaConnectionError, KafkaError,
    KafkaException, KafkaTimeoutError, ProducerFencedError, TransactionAbortableError,
    UnknownTopicOrPartitionError,
)
from gregor.client.group_metadata import ConsumerGroupMetadata
from gregor.client.network import TopicPartition
from gregor.client.producer import Producer, ProducerRecord, RecordMetadata
from gregor.client.share import AcknowledgeType, ShareConsumer, ShareConsumerRecord

__all__ = [
    "AcknowledgeType",
    "AdminClient",
    "ClientErrorCode",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerRecords",
    "IllegalStateError",
    "InvalidProducerEpochError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaException",
    "KafkaTimeoutError",
    "OffsetAndMetadata",
    "Producer",
    "ProducerFencedError",
    "ProducerRecord",
    "RecordMetadata",
    "ShareConsumer",
    "ShareConsumerRecord",
    "TopicPartition",
    "TransactionAbortableError",
    "UnknownTopicOrPartitionError",
    "WakeupException",
]
