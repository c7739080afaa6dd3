"""Gregor's client for asyncio code: `Producer`, `Consumer` and `AdminClient` that run on the
caller's event loop, with no thread of their own (`gregor.aio` re-exports this package).

They share everything but the waiting with the synchronous client in `gregor.client`: the same
configuration keys, serializers, partitioner, record accumulator and sender, fetcher, group
membership, assignors and admin operations; `ShareConsumer` is the share-group member. See docs/client.md for the differences from aiokafka.
"""

from gregor.client.aio.admin import AdminClient
from gregor.client.aio.consumer import Consumer
from gregor.client.aio.producer import Producer
from gregor.client.aio.share_consumer import ShareConsumer
from gregor.client.consumer import ConsumerRebalanceListener, ConsumerRecord, ConsumerRecords, OffsetAndMetadata
from gregor.client.errors import KafkaConnectionError, KafkaError, KafkaException, KafkaTimeoutError
from gregor.client.network import TopicPartition
from gregor.client.producer import RecordMetadata
from gregor.client.share import AcknowledgeType, ShareConsumerRecord

__all__ = [
    "AcknowledgeType", "AdminClient", "Consumer", "ConsumerRebalanceListener", "ConsumerRecord", "ConsumerRecords",
    "KafkaConnectionError", "KafkaError", "KafkaException", "KafkaTimeoutError", "OffsetAndMetadata",
    "Producer", "RecordMetadata", "ShareConsumer", "ShareConsumerRecord", "TopicPartition",
]
