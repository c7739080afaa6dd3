"""`from gregor.aio import Producer, Consumer, AdminClient`: Gregor's asyncio client, beside the
synchronous `gregor.client` as `redis.asyncio` sits beside `redis`. The code lives in
`gregor.client.aio`, inside the client layer; this module only names it (a module, not a
package: it adds no layer to the table of DESIGN.md)."""

from gregor.client.aio import (
    AcknowledgeType, AdminClient, Consumer, ConsumerRebalanceListener, ConsumerRecord, ConsumerRecords,
    KafkaConnectionError, KafkaError, KafkaException, KafkaTimeoutError, OffsetAndMetadata, Producer, RecordMetadata,
    ShareConsumer, ShareConsumerRecord, TopicPartition,
)

__all__ = [
    "AcknowledgeType", "AdminClient", "Consumer", "ConsumerRebalanceListener", "ConsumerRecord", "ConsumerRecords",
    "KafkaConnectionError", "KafkaError", "KafkaException", "KafkaTimeoutError", "OffsetAndMetadata",
    "Producer", "RecordMetadata", "ShareConsumer", "ShareConsumerRecord", "TopicPartition",
]
