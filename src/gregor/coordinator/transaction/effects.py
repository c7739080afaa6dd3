"""What the transaction coordinator asks the broker to do.

- `Respond`: answer the parked request registered under `token` (InitProducerId,
  AddPartitionsToTxn, AddOffsetsToTxn, EndTxn all wait for a `__transaction_state` write).
- `AppendTransaction`: write one record to `__transaction_state`-`partition` with acks=all and
  report the outcome through `TransactionCoordinator.append_done(append_id, error, now_ms)`.
- `WriteMarkers`: have each partition's leader write a COMMIT or ABORT marker (WriteTxnMarkers,
  grouped by leader) and report every partition's outcome through
  `TransactionCoordinator.markers_written(marker_id, errors, now_ms)`. A partition whose leader
  is unknown is reported with NOT_LEADER_OR_FOLLOWER; the coordinator retries.
"""

from __future__ import annotations

from dataclasses import dataclass

from gregor.coordinator.transaction.records import TopicPartition
from gregor.protocol.error_codes import ErrorCode


@dataclass(frozen=True)
class TxnResult:
    """An answer to InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn or EndTxn (the producer
    id and epoch are InitProducerId's, and EndTxn's from v5)."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True)
class Respond:
    token: object
    result: TxnResult


@dataclass(frozen=True)
class AppendTransaction:
    partition: int
    key: bytes
    value: bytes | None
    timestamp_ms: int
    append_id: int


@dataclass(frozen=True)
class WriteMarkers:
    marker_id: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[TopicPartition, ...]


Effect = Respond | AppendTransaction | WriteMarkers
