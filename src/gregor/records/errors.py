"""Errors of the records layer, carrying the Kafka error code a producer should see."""

from __future__ import annotations

from gregor.protocol.exceptions import KafkaError


class RecordsError(KafkaError):
    """Bytes that are not a valid record batch or message set."""
