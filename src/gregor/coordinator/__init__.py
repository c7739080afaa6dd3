"""Kafka's classic group coordinator as a sans-IO state machine (`__consumer_offsets`).

The broker decodes requests and calls `GroupCoordinator` with plain values and `now_ms`; the
coordinator answers with effects: `Respond` (a response for a parked request) and
`AppendRecords` (records for a `__consumer_offsets` partition). It never reads a clock, touches
a socket or starts a thread.
"""

from gregor.coordinator.config import GroupCoordinatorConfig
from gregor.coordinator.effects import AppendRecords, Effect, Respond
from gregor.coordinator.group_coordinator import GroupCoordinator
from gregor.coordinator.group_state import GroupState
from gregor.coordinator.partitioning import java_string_hashcode, partition_for

__all__ = [
    "AppendRecords",
    "Effect",
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "GroupState",
    "Respond",
    "java_string_hashcode",
    "partition_for",
]
