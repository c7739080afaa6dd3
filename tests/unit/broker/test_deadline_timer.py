"""The drive contract's timer: one loop timer at a core's earliest deadline, lazy about later ones."""

from __future__ import annotations

import asyncio

from gregor.broker.clock import wall_clock_ms
from gregor.broker.deadline_timer import DeadlineTimer


def run(scenario) -> list[int]:
    fired: list[int] = []

    async def main() -> None:
        timer = DeadlineTimer(wall_clock_ms, fired.append)
        await scenario(timer)

    asyncio.run(main())
    return fired


def test_it_fires_once_at_the_earliest_deadline_with_the_time_then():
    armed_at: list[int] = []

    async def scenario(timer: DeadlineTimer) -> None:
        start = wall_clock_ms()
        armed_at.append(start)
        timer.arm(start + 30)
        timer.arm(start + 10)  # earlier: taken
        timer.arm(start + 500)  # later: the earlier one stays armed (it fires early, for nothing)
        timer.arm(None)  # likewise
        await asyncio.sleep(0.08)

    fired = run(scenario)
    assert len(fired) == 1 and fired[0] >= armed_at[0] + 10


def test_a_past_deadline_fires_on_the_next_iteration_and_cancel_disarms():
    async def scenario(timer: DeadlineTimer) -> None:
        timer.arm(0)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        timer.arm(wall_clock_ms() + 10)
        timer.cancel()
        await asyncio.sleep(0.05)

    assert len(run(scenario)) == 1


def test_it_reports_how_late_it_fired_once():
    """A loop that could not run (here: blocked by a sleep on its own thread) fires the timer late;
    the lateness is reported once, for the core to discount it."""
    lateness: list[int] = []

    async def scenario(timer: DeadlineTimer) -> None:
        import time

        timer.arm(wall_clock_ms() + 10)
        time.sleep(0.2)  # the loop is stopped past the deadline
        await asyncio.sleep(0.05)
        lateness.extend((timer.take_lateness(), timer.take_lateness()))

    assert len(run(scenario)) == 1
    assert lateness[0] >= 150 and lateness[1] == 0
