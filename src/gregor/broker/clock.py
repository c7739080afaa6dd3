"""The broker's one clock: the time every sans-IO core is told.

The cores (raft, partitions, the controller, the coordinators, the purgatories) never read a
clock; the edge reads this one and passes the time in. A component is built with the clock of
the process that wires it (the composition root's), so a test or a simulation can hand it another.
"""

from __future__ import annotations

import time
from typing import Callable

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    """Milliseconds since the epoch, the unit of Kafka's timestamps and deadlines."""
    return int(time.time() * 1000)
