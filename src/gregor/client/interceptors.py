"""Producer and consumer interceptors, chained as the Java client chains them.

An interceptor sees every record on its way out (``on_send``, before serialization and
partitioning) and every acknowledgement (``on_acknowledgement``, from the producer's network
side, so it must be quick); on the consumer side every batch handed to the application
(``on_consume``) and every committed offset map (``on_commit``). The chains call interceptors
in configuration order, each ``on_send``/``on_consume`` getting the previous one's result. An
interceptor that raises is logged and skipped, never propagated, as in Java's
ProducerInterceptors and ConsumerInterceptors: the record goes on with the last good result.

Records, metadata and offsets are whatever the producer and consumer pass; this module does
not look inside them.
"""

from __future__ import annotations

import logging
from typing import Any, Generic, Iterable, Sequence, TypeVar

from gregor.client.config import ConfigError, import_object

log = logging.getLogger(__name__)

RecordT = TypeVar("RecordT")
RecordsT = TypeVar("RecordsT")


class ProducerInterceptor(Generic[RecordT]):
    """Subclass and override what you need; the defaults pass everything through."""

    def on_send(self, record: RecordT) -> RecordT:
        """Called before the key and value are serialized; returns the record to send."""
        return record

    def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
        """Called when the record was acknowledged (exception None) or failed."""

    def close(self) -> None:
        """Called once when the producer closes."""


class ConsumerInterceptor(Generic[RecordsT]):
    """Subclass and override what you need; the defaults pass everything through."""

    def on_consume(self, records: RecordsT) -> RecordsT:
        """Called before poll() returns the records; returns the records to hand over."""
        return records

    def on_commit(self, offsets: Any) -> None:
        """Called after offsets were committed."""

    def close(self) -> None:
        """Called once when the consumer closes."""


class ProducerInterceptors(Generic[RecordT]):
    """The configured producer interceptors, called in order, never raising."""

    def __init__(self, interceptors: Sequence[Any]) -> None:
        self.interceptors = list(interceptors)

    def __bool__(self) -> bool:
        return bool(self.interceptors)

    def on_send(self, record: RecordT) -> RecordT:
        """Pass the record through each interceptor; one that raises is skipped."""
        for interceptor in self.interceptors:
            try:
                record = interceptor.on_send(record)
            except Exception:
                log.warning("producer interceptor %s failed in on_send", _name(interceptor), exc_info=True)
        return record

    def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
        """Tell each interceptor how a record ended; failures are logged."""
        for interceptor in self.interceptors:
            try:
                interceptor.on_acknowledgement(metadata, exception)
            except Exception:
                log.warning("producer interceptor %s failed in on_acknowledgement", _name(interceptor),
                            exc_info=True)

    def close(self) -> None:
        """Close every interceptor, even if some fail."""
        _close_all(self.interceptors, "producer")


class ConsumerInterceptors(Generic[RecordsT]):
    """The configured consumer interceptors, called in order, never raising."""

    def __init__(self, interceptors: Sequence[Any]) -> None:
        self.interceptors = list(interceptors)

    def __bool__(self) -> bool:
        return bool(self.interceptors)

    def on_consume(self, records: RecordsT) -> RecordsT:
        """Pass the polled records through each interceptor; one that raises is skipped."""
        for interceptor in self.interceptors:
            try:
                records = interceptor.on_consume(records)
            except Exception:
                log.warning("consumer interceptor %s failed in on_consume", _name(interceptor), exc_info=True)
        return records

    def on_commit(self, offsets: Any) -> None:
        """Tell each interceptor about committed offsets; failures are logged."""
        for interceptor in self.interceptors:
            try:
                interceptor.on_commit(offsets)
            except Exception:
                log.warning("consumer interceptor %s failed in on_commit", _name(interceptor), exc_info=True)

    def close(self) -> None:
        """Close every interceptor, even if some fail."""
        _close_all(self.interceptors, "consumer")


def _name(interceptor: object) -> str:
    return type(interceptor).__qualname__


def _close_all(interceptors: Iterable[Any], side: str) -> None:
    for interceptor in interceptors:
        try:
            interceptor.close()
        except Exception:
            log.error("failed to close %s interceptor %s", side, _name(interceptor), exc_info=True)


_PRODUCER_METHODS = ("on_send", "on_acknowledgement", "close")
_CONSUMER_METHODS = ("on_consume", "on_commit", "close")


def _instantiate(settings: Sequence[Any], methods: tuple[str, ...], side: str, key: str) -> list[Any]:
    """Build interceptors in order; if one cannot be built, close those already built."""
    built: list[Any] = []
    try:
        for setting in settings:
            value = import_object(setting, key) if isinstance(setting, str) else setting
            interceptor = value() if isinstance(value, type) else value
            missing = [method for method in methods if not callable(getattr(interceptor, method, None))]
            if missing:
                raise ConfigError(f"{key}: {setting!r} is not a {side} interceptor "
                                  f"(no {', '.join(missing)})")
            built.append(interceptor)
    except BaseException:
        _close_all(built, side)
        raise
    return built


def resolve_producer_interceptors(settings: Sequence[Any],
                                  key: str = "interceptor.classes") -> ProducerInterceptors[Any]:
    """Turn ``interceptor.classes`` (classes, instances or "module:Class" paths) into a chain.

    Each must have on_send, on_acknowledgement and close (subclass ProducerInterceptor to get
    the defaults). Raises ConfigError naming the key.
    """
    return ProducerInterceptors(_instantiate(settings, _PRODUCER_METHODS, "producer", key))


def resolve_consumer_interceptors(settings: Sequence[Any],
                                  key: str = "interceptor.classes") -> ConsumerInterceptors[Any]:
    """Turn ``interceptor.classes`` into a consumer chain; each needs on_consume, on_commit and
    close (subclass ConsumerInterceptor to get the defaults). Raises ConfigError naming the key."""
    return ConsumerInterceptors(_instantiate(settings, _CONSUMER_METHODS, "consumer", key))
