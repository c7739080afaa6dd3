"""What DescribeTransactions and ListTransactions report, as plain values."""

from __future__ import annotations

from dataclasses import dataclass

from gregor.coordinator.transaction.records import TopicPartition
from gregor.protocol.error_codes import ErrorCode


@dataclass(frozen=True)
class TransactionDescription:
    transactional_id: str
    error: ErrorCode
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class ListTransactionsResult:
    error: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transactions: tuple[TransactionListing, ...] = ()
