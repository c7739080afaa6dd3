"""Exceptions of the protocol layer.

DecodeError/EncodeError are local failures of the codec; KafkaError carries a Kafka error
code from any layer up to the broker, which puts the code into its response.
"""

from __future__ import annotations


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of the expected message."""


class EncodeError(ValueError):
    """A message that cannot be encoded at the requested version."""


class KafkaError(Exception):
    """A failure that a Kafka peer understands: an error code and an optional message."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or "")
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"KafkaError({self.code!r}, {self.message!r})"
