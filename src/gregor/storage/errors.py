"""Errors of the storage layer, carrying the Kafka error code the client should see."""

from __future__ import annotations

from gregor.protocol.exceptions import KafkaError


class StorageError(KafkaError):
    """A request the log cannot serve (out of range, too large, bad sequence, ...)."""
