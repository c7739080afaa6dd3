"""Gregor's Python client for any Kafka-compatible cluster.

Its names are imported on first use (PEP 562), so that a program using one part of the client
(a tool's admin calls, its error codes) does not load the others: each Python process a pipeline
starts pays for what it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_MODULE_OF = {
    "AcknowledgeType": "gregor.client.share",
    "AdminClient": "gregor.client.admin",
    "ClientErrorCode": "gregor.client.errors",
    "Consumer": "gregor.client.consumer",
    "ConsumerGroupMetadata": "gregor.client.group_metadata",
    "ConsumerRebalanceListener": "gregor.client.consumer",
    "ConsumerRecord": "gregor.client.consumer",
    "ConsumerRecords": "gregor.client.consumer",
    "IllegalStateError": "gregor.client.errors",
    "InvalidProducerEpochError": "gregor.client.errors",
    "KafkaConnectionError": "gregor.client.errors",
    "KafkaError": "gregor.client.errors",
    "KafkaException": "gregor.client.errors",
    "KafkaTimeoutError": "gregor.client.errors",
    "OffsetAndMetadata": "gregor.client.consumer",
    "Producer": "gregor.client.producer",
    "ProducerFencedError": "gregor.client.errors",
    "ProducerRecord": "gregor.client.producer",
    "RecordMetadata": "gregor.client.producer",
    "ShareConsumer": "gregor.client.share",
    "ShareConsumerRecord": "gregor.client.share",
    "TopicPartition": "gregor.client.network",
    "TransactionAbortableError": "gregor.client.errors",
    "UnknownTopicOrPartitionError": "gregor.client.errors",
    "WakeupException": "gregor.client.consumer",
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'gregor.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found without this function from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})
