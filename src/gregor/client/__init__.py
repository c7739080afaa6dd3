"""Gregor's Python client for any Kafka-compatible cluster."""

from gregor.client.admin import AdminClient
from gregor.client.errors import (
    ClientErrorCode, KafkaConnectionError, KafkaError, KafkaException, KafkaTimeoutError,
    UnknownTopicOrPartitionError,
)

__all__ = [
    "AdminClient",
    "ClientErrorCode",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaException",
    "KafkaTimeoutError",
    "UnknownTopicOrPartitionError",
]
