"""What the controller is asked and what it answers: plain values, independent of wire versions.

A `ControllerResult` pairs the answer with the metadata records that make it true; the caller
commits the records (raft append, then replay) before sending the answer, so a client never
sees a success the log does not hold.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Any, Generic, Mapping, Sequence, TypeVar

from gregor.metadata.topic_configs import ConfigEntry
from gregor.protocol.error_codes import ErrorCode

T = TypeVar("T")
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True)
class ControllerResult(Generic[T]):
    response: T
    records: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Endpoint:
    """An advertised listener for a broker registration (security protocol id: 0 PLAINTEXT,
    1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL)."""

    listener: str
    host: str
    port: int
    security_protocol: int = 0


@dataclass(frozen=True)
class CreatableTopic:
    """One topic of a CreateTopics request; -1 means the broker default, as on the wire."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Mapping[int, Sequence[int]] = field(default_factory=dict)
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicResult:
    name: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    topic_id: uuid.UUID = ZERO_UUID
    num_partitions: int = -1
    replication_factor: int = -1
    configs: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True)
class DeleteTopicResult:
    name: str | None
    topic_id: uuid.UUID = ZERO_UUID
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class PartitionsIncrease:
    """One topic of a CreatePartitions request: the new total and, optionally, the replicas of
    each new partition."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True)
class CreatePartitionsResult:
    name: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


class AlterConfigOp(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class ConfigOp:
    name: str
    op: AlterConfigOp
    value: str | None = None


@dataclass(frozen=True)
class AlterConfigsResource:
    """AlterConfigs: the complete new config set of a resource (None values delete)."""

    resource_type: int
    resource_name: str
    configs: Mapping[str, str | None]


@dataclass(frozen=True)
class IncrementalAlterConfigsResource:
    resource_type: int
    resource_name: str
    ops: Sequence[ConfigOp]


@dataclass(frozen=True)
class AlterConfigsResult:
    resource_type: int
    resource_name: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class ProducerIdsBlock:
    """AllocateProducerIds' answer: ids first_producer_id .. first_producer_id + size - 1."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    broker_id: int = -1
    first_producer_id: int = -1
    size: int = 0


@dataclass(frozen=True)
class BrokerRegistrationReply:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    broker_epoch: int = -1
