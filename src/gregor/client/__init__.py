"""Gregor's Python client for any Kafka-compatible cluster."""

from gregor.client.admin import AdminClient
from gregor.client.consumer import (
    Consumer, ConsumerRebalanceListener, ConsumerRecord, ConsumerRecords, OffsetAndMetadata, WakeupException,
)
from gregor.client.errors import (
    ClientErrorCode, KafkaConnectionError, KafkaError, KafkaException, KafkaTimeoutError,
    UnknownTopicOrPartitionError,
)
from gregor.client.network import TopicPartition
from gregor.client.producer import Producer, ProducerRecord, RecordMetadata
from gregor.client.share import AcknowledgeType, ShareConsumer, ShareConsumerRecord

__all__ = [
    "AcknowledgeType",
    "AdminClient",
    "ClientErrorCode",
    "Consumer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerRecords",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaException",
    "KafkaTimeoutError",
    "OffsetAndMetadata",
    "Producer",
    "ProducerRecord",
    "RecordMetadata",
    "ShareConsumer",
    "ShareConsumerRecord",
    "TopicPartition",
    "UnknownTopicOrPartitionError",
    "WakeupException",
]
