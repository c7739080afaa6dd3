"""The ISR as a leader sees it under KIP-497: the committed ISR plus at most one proposal in flight.

A proposal (AlterPartition) changes nothing until the controller confirms it. Meanwhile the
high watermark is computed over the maximal ISR, committed and proposed members together, so it
never passes a record missing from whichever of the two ends up committed: an expansion counts
the newcomer at once, a shrink keeps counting the leaving replica until it is confirmed.
`min.insync.replicas` is checked against the committed ISR only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IsrProposal:
    """An AlterPartition in flight; sent again at `resend_ms` until the metadata or the
    controller's answer settles it."""

    request_id: int
    isr: tuple[int, ...]
    resend_ms: int


class IsrState:
    __slots__ = ("committed", "partition_epoch", "pending")

    def __init__(self, committed: tuple[int, ...], partition_epoch: int) -> None:
        self.committed = committed
        self.partition_epoch = partition_epoch
        self.pending: IsrProposal | None = None

    @property
    def maximal(self) -> frozenset[int]:
        if self.pending is None:
            return frozenset(self.committed)
        return frozenset(self.committed) | frozenset(self.pending.isr)

    def commit(self, isr: tuple[int, ...], partition_epoch: int) -> bool:
        """Take a confirmed state newer than the known one; it supersedes any proposal."""
        if partition_epoch <= self.partition_epoch:
            return False
        self.committed = tuple(isr)
        self.partition_epoch = partition_epoch
        self.pending = None
        return True

    def abandon(self, request_id: int) -> bool:
        """The controller refused proposal `request_id` and says it was not applied: back to the
        committed ISR alone."""
        if self.pending is None or self.pending.request_id != request_id:
            return False
        self.pending = None
        return True

    def __repr__(self) -> str:
        return f"IsrState({list(self.committed)}, epoch={self.partition_epoch}, pending={self.pending})"
