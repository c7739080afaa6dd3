"""A partition's health as Kafka's metrics count it, from its leader, replicas and ISR.

Kafka counts a partition in every class it falls into (UnderReplicatedPartitions includes those
under min ISR; OfflinePartitionsCount those without a leader); the page shows each partition's
worst state and the counts per class, so the numbers match what a Kafka operator is used to.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable, Sequence


class PartitionState(enum.Enum):
    """From best to worst; a partition shows the worst that applies."""

    ONLINE = "online"
    UNDER_REPLICATED = "under-replicated"
    UNDER_MIN_ISR = "under-min-isr"
    OFFLINE = "offline"


@dataclass(frozen=True)
class Health:
    """Which of Kafka's classes a partition falls into."""

    offline: bool
    under_replicated: bool
    under_min_isr: bool

    @property
    def state(self) -> PartitionState:
        if self.offline:
            return PartitionState.OFFLINE
        if self.under_min_isr:
            return PartitionState.UNDER_MIN_ISR
        if self.under_replicated:
            return PartitionState.UNDER_REPLICATED
        return PartitionState.ONLINE


def partition_health(leader: int, replicas: Sequence[int], isr: Sequence[int], min_isr: int) -> Health:
    """Offline: no leader. Under-replicated: fewer in-sync replicas than replicas. Under min ISR:
    fewer in-sync replicas than `min.insync.replicas` (acks=all producers are refused)."""
    return Health(offline=leader < 0, under_replicated=len(isr) < len(replicas),
                  under_min_isr=leader >= 0 and len(isr) < min_isr)


@dataclass
class StateCounts:
    """Partitions per class; a partition may count in several, as in Kafka's metrics."""

    total: int = 0
    offline: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    by_state: dict[PartitionState, int] = field(default_factory=lambda: {state: 0 for state in PartitionState})

    def add(self, health: Health) -> None:
        self.total += 1
        self.offline += health.offline
        self.under_replicated += health.under_replicated
        self.under_min_isr += health.under_min_isr
        self.by_state[health.state] += 1

    @property
    def healthy(self) -> bool:
        return not (self.offline or self.under_replicated or self.under_min_isr)


def count(healths: Iterable[Health]) -> StateCounts:
    counts = StateCounts()
    for health in healths:
        counts.add(health)
    return counts
