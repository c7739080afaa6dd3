"""What the coordinator asks the broker to do: send a response, append records.

Effects come out of every call that can change state, in the order they must be carried out.
Records of one `AppendRecords` form one batch in `__consumer_offsets`; batches for a partition
must be appended in the order they were emitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from gregor.coordinator.consumer.results import HeartbeatResult
from gregor.coordinator.results import JoinResult, OffsetCommitResult, SyncResult

Record = tuple[bytes, bytes | None]


@dataclass(frozen=True)
class Respond:
    """Answer the parked request the broker registered under `token`."""

    token: object
    result: JoinResult | SyncResult | OffsetCommitResult | HeartbeatResult


@dataclass(frozen=True)
class AppendRecords:
    """Append `records` ((key, value-or-None) pairs) to `__consumer_offsets`-`partition`.

    With an `append_id`, the coordinator is waiting for the write (acks=all, as Kafka's
    coordinator appends group and offset records): the broker must call
    `GroupCoordinator.append_done(append_id, error, now_ms)` once the records are committed or
    the append failed, even if the partition has since been unloaded. Responses that depend on
    the write are only emitted then. Without one (tombstones of expired or deleted state, which
    Kafka writes with acks=0 and rewrites on the next cleanup if lost) nothing waits.
    With a `producer_id` (TxnOffsetCommit) the batch is that producer's transactional batch, so
    that the transaction's marker closes it in the log.
    """

    partition: int
    records: tuple[Record, ...]
    timestamp_ms: int
    append_id: int | None = None
    producer_id: int = -1
    producer_epoch: int = -1


Effect = Respond | AppendRecords
