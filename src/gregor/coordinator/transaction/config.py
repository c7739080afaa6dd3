"""The transaction coordinator's broker settings, with Kafka's keys and defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TransactionConfig:
    """Field names follow the broker keys (`transaction.max.timeout.ms` -> `transaction_max_timeout_ms`)."""

    transaction_state_log_num_partitions: int = 50
    transaction_max_timeout_ms: int = 900000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10000
    #: A transactional id with no transaction for this long is forgotten (a tombstone is written).
    transactional_id_expiration_ms: int = 604800000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3600000
    #: Pause before markers that failed with a retriable error, or a completion record that
    #: could not be written, are tried again.
    retry_backoff_ms: int = 100
    #: The transaction protocol in force: 2 is KIP-890's (the epoch bumped on every EndTxn, v5+
    #: clients), 0 or 1 the classic one. The broker reads it from the `transaction.version` feature.
    transaction_version: int = 0
