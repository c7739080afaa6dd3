"""Errors of Gregor's client: one table for Kafka's error codes and the client's own.

Every failure the client reports is a `KafkaException` whose `.error` is a `KafkaError` value
(`code`, `name`, `message`, `retriable`, `fatal`), so callers branch on data, not on message
text. Broker errors keep Kafka's codes and names (`gregor.protocol.error_codes.ErrorCode`,
generated from Kafka's errors table) and Kafka's retriable set, which is exactly the set of
`RetriableException` subclasses in Kafka's `Errors.java` (REBALANCE_IN_PROGRESS is not one:
the consumer rejoins, it does not resend).

Failures that happen inside the client use negative codes whose names start with an
underscore, with librdkafka's values, so code written for confluent-kafka reads the same:

| code | name | raised when | retriable |
| ---: | --- | --- | --- |
| -199 | `_BAD_MSG` | a broker's response could not be decoded (the connection is closed) | no |
| -197 | `_DESTROY` | the client was closed while the operation was pending | no |
| -195 | `_TRANSPORT` | connecting failed, or the connection was lost with the request in flight | yes |
| -192 | `_MSG_TIMED_OUT` | a record was not acknowledged within `delivery.timeout.ms` | yes |
| -191 | `_PARTITION_EOF` | a consumer reached the end of a partition (informational) | no |
| -190 | `_UNKNOWN_PARTITION` | the partition does not exist in the cluster's metadata | no |
| -188 | `_UNKNOWN_TOPIC` | the topic does not exist in the cluster's metadata | no |
| -187 | `_ALL_BROKERS_DOWN` | no broker of the cluster (or of `bootstrap.servers`) could be reached | yes |
| -186 | `_INVALID_ARG` | an argument or configuration value is invalid | no |
| -185 | `_TIMED_OUT` | a request or an operation did not finish within its timeout | yes |
| -184 | `_QUEUE_FULL` | a local buffer is full (`queue.buffering.max.*`) | yes |
| -172 | `_STATE` | the call is not allowed in the client's current state | no |

`fatal` marks errors after which the client instance cannot go on (an idempotent or
transactional producer that was fenced); no error is fatal by its code alone, the component
that knows the context sets it with `KafkaError.of(code, fatal=True)`. `txn_requires_abort`
marks errors that leave a transactional producer's transaction needing `abort_transaction()`
(librdkafka's name for Java's abortable errors).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gregor.protocol.error_codes import RETRIABLE, ErrorCode


class ClientErrorCode(enum.IntEnum):
    """Errors raised by the client itself (librdkafka's local error codes)."""

    _BAD_MSG = -199
    _DESTROY = -197
    _TRANSPORT = -195
    _MSG_TIMED_OUT = -192
    _PARTITION_EOF = -191
    _UNKNOWN_PARTITION = -190
    _UNKNOWN_TOPIC = -188
    _ALL_BROKERS_DOWN = -187
    _INVALID_ARG = -186
    _TIMED_OUT = -185
    _QUEUE_FULL = -184
    _STATE = -172
    _INTR = -163


_CLIENT_RETRIABLE = frozenset({
    ClientErrorCode._TRANSPORT,
    ClientErrorCode._MSG_TIMED_OUT,
    ClientErrorCode._ALL_BROKERS_DOWN,
    ClientErrorCode._TIMED_OUT,
    ClientErrorCode._QUEUE_FULL,
})

_DESCRIPTIONS = {
    ClientErrorCode._BAD_MSG: "Local: Bad message format",
    ClientErrorCode._DESTROY: "Local: Client closed",
    ClientErrorCode._TRANSPORT: "Local: Broker transport failure",
    ClientErrorCode._MSG_TIMED_OUT: "Local: Message timed out",
    ClientErrorCode._PARTITION_EOF: "Local: End of partition",
    ClientErrorCode._UNKNOWN_PARTITION: "Local: Unknown partition",
    ClientErrorCode._UNKNOWN_TOPIC: "Local: Unknown topic",
    ClientErrorCode._ALL_BROKERS_DOWN: "Local: All broker connections are down",
    ClientErrorCode._INVALID_ARG: "Local: Invalid argument or configuration",
    ClientErrorCode._TIMED_OUT: "Local: Timed out",
    ClientErrorCode._QUEUE_FULL: "Local: Queue full",
    ClientErrorCode._STATE: "Local: Erroneous state",
    ClientErrorCode._INTR: "Local: Operation interrupted",
}


def _name_and_retriable(code: int) -> tuple[str, bool]:
    if code < ErrorCode.UNKNOWN_SERVER_ERROR:
        try:
            client_code = ClientErrorCode(code)
        except ValueError:
            return f"_UNKNOWN_LOCAL_ERROR_{-code}", False
        return client_code.name, client_code in _CLIENT_RETRIABLE
    try:
        kafka_code = ErrorCode(code)
    except ValueError:
        # Kafka's clients map a code they do not know to UNKNOWN_SERVER_ERROR; the code is kept.
        return ErrorCode.UNKNOWN_SERVER_ERROR.name, False
    return kafka_code.name, kafka_code in RETRIABLE


@dataclass(frozen=True)
class KafkaError:
    """What went wrong, as data: Kafka's code and name plus how a caller may react."""

    code: int
    name: str
    message: str
    retriable: bool
    fatal: bool = False
    txn_requires_abort: bool = False

    @classmethod
    def of(cls, code: int, message: str | None = None, *, fatal: bool = False,
           txn_requires_abort: bool = False) -> KafkaError:
        """The error for a Kafka or client error code; the message defaults to a description."""
        code = int(code)
        name, retriable = _name_and_retriable(code)
        if not message:
            message = _DESCRIPTIONS.get(code, "") if code < 0 else ""
        return cls(code=code, name=name, message=message, retriable=retriable and not (fatal or txn_requires_abort),
                   fatal=fatal, txn_requires_abort=txn_requires_abort)

    def __str__(self) -> str:
        return f"{self.name}: {self.message}" if self.message else self.name


class KafkaException(Exception):
    """Every failure the client raises; `.error` says which and whether to retry."""

    def __init__(self, error: KafkaError | int, message: str | None = None) -> None:
        if not isinstance(error, KafkaError):
            error = KafkaError.of(error, message)
        super().__init__(error)
        self.error = error

    @property
    def code(self) -> int:
        return self.error.code

    @property
    def name(self) -> str:
        return self.error.name

    @property
    def retriable(self) -> bool:
        return self.error.retriable

    def __str__(self) -> str:
        return str(self.error)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.error!r})"


class KafkaTimeoutError(KafkaException):
    """A request or operation ran out of time (`_TIMED_OUT`, `_MSG_TIMED_OUT`, REQUEST_TIMED_OUT)."""


class KafkaConnectionError(KafkaException):
    """No usable connection (`_TRANSPORT`, `_ALL_BROKERS_DOWN`, NETWORK_EXCEPTION)."""


class UnknownTopicOrPartitionError(KafkaException):
    """The topic or partition does not exist (UNKNOWN_TOPIC_OR_PARTITION and friends)."""


class IllegalStateError(KafkaException):
    """The call is not allowed in the client's current state (`_STATE`; Java's IllegalStateException),
    such as `commit_transaction()` with no transaction begun."""


class TransactionAbortableError(KafkaException):
    """The current transaction cannot commit; `abort_transaction()` is the only transactional call
    allowed until it succeeds, and the producer can then begin a new one (Java's abortable errors,
    TRANSACTION_ABORTABLE among them). `.error.txn_requires_abort` is True."""


class InvalidProducerEpochError(TransactionAbortableError):
    """A partition leader refused a produce with an old epoch (INVALID_PRODUCER_EPOCH, KIP-588):
    abortable; the abort then finds out from the coordinator whether the producer was fenced."""


class ProducerFencedError(KafkaException):
    """Another producer with the same `transactional.id` took over (PRODUCER_FENCED, or an old
    epoch at the transaction coordinator): fatal, the producer can only be closed."""


_EXCEPTION_CLASSES: dict[int, type[KafkaException]] = {
    ClientErrorCode._TIMED_OUT: KafkaTimeoutError,
    ClientErrorCode._MSG_TIMED_OUT: KafkaTimeoutError,
    ErrorCode.REQUEST_TIMED_OUT: KafkaTimeoutError,
    ClientErrorCode._TRANSPORT: KafkaConnectionError,
    ClientErrorCode._ALL_BROKERS_DOWN: KafkaConnectionError,
    ErrorCode.NETWORK_EXCEPTION: KafkaConnectionError,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: UnknownTopicOrPartitionError,
    ErrorCode.UNKNOWN_TOPIC_ID: UnknownTopicOrPartitionError,
    ClientErrorCode._UNKNOWN_TOPIC: UnknownTopicOrPartitionError,
    ClientErrorCode._UNKNOWN_PARTITION: UnknownTopicOrPartitionError,
    ErrorCode.PRODUCER_FENCED: ProducerFencedError,
    ErrorCode.INVALID_PRODUCER_EPOCH: InvalidProducerEpochError,
    ErrorCode.TRANSACTION_ABORTABLE: TransactionAbortableError,
    ClientErrorCode._STATE: IllegalStateError,
}


def error_for(code: int, message: str | None = None) -> KafkaException:
    """The exception to raise for an error code, as the most specific subclass there is."""
    return _EXCEPTION_CLASSES.get(code, KafkaException)(KafkaError.of(code, message))


def transaction_error(code: int, message: str, *, fatal: bool = False, abortable: bool = False) -> KafkaException:
    """The exception for an error that ended a transaction's hope: fatal ones (the producer must be
    closed) keep their own class; abortable ones are TransactionAbortableError (or its subclass)."""
    error = KafkaError.of(code, message, fatal=fatal, txn_requires_abort=abortable and not fatal)
    cls = _EXCEPTION_CLASSES.get(code, KafkaException)
    if error.txn_requires_abort and not issubclass(cls, TransactionAbortableError):
        cls = TransactionAbortableError
    elif error.fatal and issubclass(cls, TransactionAbortableError):
        cls = ProducerFencedError if code == ErrorCode.INVALID_PRODUCER_EPOCH else KafkaException
    return cls(error)
