"""Gregor: a Kafka-compatible event streaming platform in Python.

The client: `from gregor import Producer, Consumer, AdminClient` (see `gregor.client`). It is imported on
first use, so the broker and the tools do not load the client just by importing `gregor`.
"""

from typing import Any

__version__ = "0.1.0"

_CLIENT_NAMES = ("AdminClient", "Consumer", "ConsumerRebalanceListener", "KafkaException", "OffsetAndMetadata",
                 "Producer", "TopicPartition")

__all__ = [*_CLIENT_NAMES, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        import gregor.client
        return getattr(gregor.client, name)
    raise AttributeError(f"module 'gregor' has no attribute {name!r}")
