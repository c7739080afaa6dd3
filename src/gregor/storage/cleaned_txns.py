"""Transactions as a cleaning walks the log in offset order (Kafka's CleanedTransactionMetadata).

The cleaner cleans only below the last stable offset, so every transaction with data there has its
marker, and the aborted ones are in the `.txnindex` files (`Log.aborted_transactions`). Rules:

| batch                                    | outcome                                                 |
| ---------------------------------------- | ------------------------------------------------------- |
| data of an aborted transaction           | removed (not mapped either: it must not hide the key's  |
|                                          | committed value)                                        |
| COMMIT/ABORT marker, a batch of its      | kept (consumers still need it), an ABORT's index entry  |
| transaction read in this cleaning        | copied to the cleaned segment                           |
| marker, no batch of its transaction read | may go: the first cleaning stamps a delete horizon      |
|                                          | (now + delete.retention.ms, as for tombstones), the     |
|                                          | first cleaning at or after it removes the marker        |
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from gregor.records.batch import BatchHeader
from gregor.storage.txn_index import AbortedTxn


class CleanedTransactions:
    def __init__(self, aborted: Sequence[AbortedTxn]) -> None:
        self._aborted: dict[int, list[AbortedTxn]] = {}
        for txn in sorted(aborted, key=lambda t: t.first_offset):
            self._aborted.setdefault(txn.producer_id, []).append(txn)
        self._committed_read: set[int] = set()  # producers with a committed batch read since their last marker
        self._aborted_read: set[int] = set()

    def _aborted_txn(self, producer_id: int, offset: int) -> AbortedTxn | None:
        """The aborted transaction of the producer that spans `offset`, if any."""
        txns = self._aborted.get(producer_id)
        if not txns:
            return None
        index = bisect_right([txn.first_offset for txn in txns], offset) - 1
        if index >= 0 and txns[index].last_offset >= offset:
            return txns[index]
        return None

    def is_aborted(self, header: BatchHeader) -> bool:
        """Whether a data batch belongs to an aborted transaction (no state changes)."""
        return header.is_transactional and self._aborted_txn(header.producer_id, header.base_offset) is not None

    def on_data_batch(self, header: BatchHeader) -> bool:
        """A data batch read in offset order; True when it is aborted and goes."""
        if not header.is_transactional:
            return False
        if self.is_aborted(header):
            self._aborted_read.add(header.producer_id)
            return True
        self._committed_read.add(header.producer_id)
        return False

    def on_marker(self, header: BatchHeader, commit: bool) -> tuple[bool, AbortedTxn | None]:
        """A marker read in offset order: whether it may go, and (when an ABORT stays) the index
        entry its cleaned segment keeps."""
        producer_id = header.producer_id
        if commit:
            read = producer_id in self._committed_read
            self._committed_read.discard(producer_id)
            return not read, None
        read = producer_id in self._aborted_read
        self._aborted_read.discard(producer_id)
        if not read:
            return True, None
        txn = self._aborted_txn(producer_id, header.base_offset)
        return False, txn
