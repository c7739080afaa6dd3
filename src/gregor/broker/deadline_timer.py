"""The drive contract's asyncio edge: one loop timer per sans-IO core, armed for its next deadline.

Every core the broker runs is driven the same way: events and the time in, effects and the core's
next deadline out. Raft (`RaftClient.next_deadline`), the hosted partitions
(`Partition.next_deadline`), the group coordinator, the controller's duties and the fetch
purgatory each report when they next have work of their own; after each event their driver
re-arms a `DeadlineTimer` for that moment, and when it fires the driver polls the core with the
time then. Nothing is polled on a fixed period, so an idle broker sleeps and a timer fires when
its deadline comes rather than up to a period later.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from gregor.broker.clock import Clock


class DeadlineTimer:
    def __init__(self, clock: Clock, fire: Callable[[int], None]) -> None:
        """`fire(now_ms)` runs when the armed deadline comes (on the loop, never re-entrantly)."""
        self._clock = clock
        self._fire = fire
        self._handle: asyncio.TimerHandle | None = None
        self._deadline: int | None = None
        self._lateness_ms = 0

    def arm(self, deadline_ms: int | None) -> None:
        """Fire at `deadline_ms` (this timer's clock; one already past fires on the next loop
        iteration) unless armed for that moment or earlier already.

        A later deadline (or None) leaves an earlier one armed: the timer fires early, the core
        finds nothing due, and its driver arms the later one then. A core whose deadline moves
        later with nearly every event (a follower's fetch timeout, a replica's lag) thus costs one
        spurious wake-up per deadline instead of a timer cancelled and made anew per event."""
        if deadline_ms is None or (self._deadline is not None and self._deadline <= deadline_ms):
            return
        self.cancel()
        self._deadline = deadline_ms
        delay_s = max(deadline_ms - self._clock(), 0) / 1000
        self._handle = asyncio.get_running_loop().call_later(delay_s, self._run)

    def cancel(self) -> None:
        """Disarm (when the core stops)."""
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._deadline = None

    def take_lateness(self) -> int:
        """How late the timer fired, in total, since this was last asked: a process stopped or
        starved of CPU past a deadline shows here, which a core judging others by their silence
        (the controller's broker sessions) must not count against them."""
        lateness, self._lateness_ms = self._lateness_ms, 0
        return lateness

    def _run(self) -> None:
        deadline = self._deadline
        self._handle = self._deadline = None
        now = self._clock()
        if deadline is not None:
            self._lateness_ms += max(now - deadline, 0)
        self._fire(now)
