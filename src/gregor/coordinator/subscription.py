"""The topics a `consumer` member subscribes to, read from its protocol metadata.

Kafka parses every version of ConsumerProtocolSubscription with the version 0 schema (topics,
user data), which prefixes all later versions, so the coordinator does not depend on which
version a client speaks. Anything unreadable means "unknown" (None), never an error.
"""

from __future__ import annotations

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from gregor.protocol.primitives import Reader

CONSUMER_PROTOCOL_TYPE = "consumer"


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The topics in a ConsumerProtocolSubscription, or None when the bytes are not one."""
    reader = Reader(metadata)
    try:
        reader.int16()
        subscription = ConsumerProtocolSubscription.decode(reader, 0)
    except DecodeError:
        return None
    return frozenset(subscription.topics)
