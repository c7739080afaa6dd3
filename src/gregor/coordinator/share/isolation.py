"""`share.isolation.level` (Kafka 4.1's group config), sans-IO: which record batches a share
group with read_committed never delivers.

A read_committed share-partition acquires only below the last stable offset (the edge reads no
further) and archives, undelivered, the batches of aborted transactions, as Kafka's
SharePartition does with the aborted-transaction index a read_committed fetch uses: a
transactional batch of producer P is aborted when an aborted transaction of P began at or before
it and its abort marker comes after it.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"
ISOLATION_LEVELS = (READ_UNCOMMITTED, READ_COMMITTED)


class LogBatch(NamedTuple):
    base_offset: int
    last_offset: int
    producer_id: int
    is_transactional: bool
    is_control: bool


class AbortedRange(NamedTuple):
    """An aborted transaction: its producer, first offset and the offset of its abort marker."""

    producer_id: int
    first_offset: int
    marker_offset: int


def undeliverable(batches: Iterable[LogBatch], aborted: Iterable[AbortedRange],
                  read_committed: bool) -> list[tuple[int, int, bool]]:
    """The batches as `SharePartition.acquire` takes them, (base, last, never delivered): control
    batches never are, and with `read_committed` neither are aborted transactions' batches."""
    aborts: dict[int, list[AbortedRange]] = {}
    if read_committed:
        for txn in aborted:
            aborts.setdefault(txn.producer_id, []).append(txn)
    return [(b.base_offset, b.last_offset, b.is_control or (b.is_transactional and any(
        t.first_offset <= b.base_offset < t.marker_offset for t in aborts.get(b.producer_id, ()))))
        for b in batches]
