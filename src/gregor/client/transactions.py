"""What the admin client reports about transactions (ListTransactions, DescribeTransactions),
with the fields of Kafka's Admin API (TransactionListing, TransactionDescription)."""

from __future__ import annotations

from dataclasses import dataclass

from gregor.client.network import TopicPartition


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int


@dataclass(frozen=True)
class TransactionDescription:
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    #: When the ongoing transaction began (ms since the epoch); None between transactions.
    transaction_start_time_ms: int | None
    topic_partitions: tuple[TopicPartition, ...]
