"""Transactions in the replication simulation: a transactional producer (a new producer id per
transaction, so a batch lost to a fault leaves no sequence gap behind) and a coordinator that
sends the COMMIT/ABORT marker to the leader until it is replicated (acks=all), as Kafka's does.

The invariants:
- every replica's last stable offset lies between its log start and its high watermark, and a
  leader's never moves back within its epoch;
- once the cluster has converged, every replica's producer state and aborted-transaction index
  are what a model replay of its log gives: the open transactions (producer -> first offset) and
  the aborted ones (producer, first offset, marker offset). This is what maintaining them
  incrementally (leader appends, follower appends, truncations, crash recovery) must agree with.
"""

from __future__ import annotations

from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records, txn_marker_of
from gregor.storage.log import Log

FIRST_PRODUCER_ID = 10_000
CLOSE_CHANCE = 0.3


class TransactionalProducer:
    """The open transaction, if any, and the markers the coordinator still has to deliver."""

    def __init__(self) -> None:
        self.next_producer_id = FIRST_PRODUCER_ID
        self.open: tuple[int, int] | None = None  # producer id, next sequence
        self.pending: dict[int, bool] = {}  # producer id -> commit, until the marker is replicated

    def batch(self, value: bytes, now_ms: int) -> tuple[int, bytes]:
        """The next batch of the open transaction (one opens if none is); its producer id."""
        if self.open is None:
            self.open = (self.next_producer_id, 0)
            self.next_producer_id += 1
        producer_id, sequence = self.open
        self.open = (producer_id, sequence + 1)
        builder = BatchBuilder(producer_id=producer_id, producer_epoch=0, base_sequence=sequence, is_transactional=True)
        builder.append(now_ms, None, value)
        return producer_id, builder.build()

    def maybe_close(self, roll: float, commit: bool) -> None:
        """End the open transaction when `roll` says so: its marker becomes pending."""
        if self.open is not None and roll < CLOSE_CHANCE:
            self.pending[self.open[0]] = commit
            self.open = None


def modelled(log: Log) -> tuple[dict[int, int], list[tuple[int, int, int]]]:
    """(open transactions, aborted transactions) from a plain replay of the log's batches."""
    data = log.read_bytes(log.log_start_offset, 1 << 30)
    open_txns: dict[int, int] = {}
    aborted: list[tuple[int, int, int]] = []
    for header, pos in scan_batches(data)[0]:
        if header.producer_id < 0:
            continue
        if header.is_control:
            (record,) = decode_records(data, pos, header, 1 << 20)
            marker = txn_marker_of(record)
            first = open_txns.pop(header.producer_id, None)
            if marker is not None and not marker[0] and first is not None:
                aborted.append((header.producer_id, first, header.base_offset))
        elif header.is_transactional:
            open_txns.setdefault(header.producer_id, header.base_offset)
    return open_txns, aborted


def maintained(log: Log) -> tuple[dict[int, int], list[tuple[int, int, int]]]:
    """The same, as the log keeps them: its producer state and its `.txnindex` entries."""
    aborted = [(txn.producer_id, txn.first_offset, txn.last_offset)
               for segment in log.segments for txn in segment.txn_index.entries]
    return dict(log.producer_state.ongoing), aborted
