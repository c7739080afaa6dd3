"""The share consumer (KIP-932 share groups): `ShareConsumer`, `AcknowledgeType`, `ShareConsumerRecord`."""

from gregor.client.share.acknowledgements import AcknowledgeType
from gregor.client.share.consumer import ShareConsumer
from gregor.client.share.records import ShareConsumerRecord

__all__ = ["AcknowledgeType", "ShareConsumer", "ShareConsumerRecord"]
