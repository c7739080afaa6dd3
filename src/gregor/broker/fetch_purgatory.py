"""The asyncio edge of the replication layer's fetch purgatory (`DelayedFetches`).

A fetch parks with a callback, due when an event on one of its partitions makes it due (a
change of the partition, `wake`; progress on it that satisfies the fetch's condition, `check`)
or its max wait ends; one timer, armed for the earliest deadline, expires them. The decisions
stay in the sans-IO purgatory, which the replication simulator runs too.

The callbacks of the fetches an event made due run when the step that made them due ends
(`answer_due`, called by the dispatcher's `step_done`: the append of an acks=all produce, the
follower fetch that moved a high watermark), or in the next loop iteration when no step ends
(a timer, a metadata change). Kafka completes a delayed fetch in the thread whose event made
it due; here that thread's event is the connection's step, and the event cannot be carried out
halfway when the callbacks run (a high watermark is moved from inside a partition's update).
Each loop iteration between the event and the answer let the reads of other connections go
first: a leader's answers to its followers waited two iterations for the append that made them
due, a tenth to a third of a replication round.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Callable, Hashable, Iterable

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.network import LaterAnswer
from gregor.replication.delayed_fetch import Condition, DelayedFetches

Due = Callable[[], None]


class FetchPurgatory:
    def __init__(self, clock_ms: Clock = wall_clock_ms) -> None:
        self._delayed: DelayedFetches[Due] = DelayedFetches()
        self._clock_ms = clock_ms
        self._timer = DeadlineTimer(clock_ms, self._expire)
        self._due: list[Due] = []
        self._run_scheduled = False

    def __len__(self) -> int:
        return len(self._delayed)

    def now_ms(self) -> int:
        return self._clock_ms()

    def park(self, keys: Iterable[Hashable], deadline_ms: int, ready: Condition | None = None) -> asyncio.Future[None]:
        """A future done when the fetch is due an answer: an event on one of its partitions that
        makes it due (with `ready`, progress only once `ready()` holds), or `deadline_ms` (this
        purgatory's clock). Park in the same step as the read that found too little, so no event
        falls between them."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.park_callback(keys, deadline_ms, functools.partial(_resolve, future), ready)
        return future

    def park_callback(self, keys: Iterable[Hashable], deadline_ms: int, due: Due,
                      ready: Condition | None = None) -> None:
        """`park`, with `due()` called once when the fetch is due (at the end of the step whose
        event made it due)."""
        self._delayed.park(keys, deadline_ms, due, ready)
        self._arm()

    def answer_when_due(self, keys: Iterable[Hashable], deadline_ms: int, answer: Callable[[], object],
                        ready: Condition | None = None) -> LaterAnswer:
        """What `answer()` returns once the parked fetch is due, given by a callback: no task or
        future per parked fetch (two per replication round on a leader, one per record a
        caught-up consumer reads); the answer is encoded as it is given (`LaterAnswer`). A result
        cancelled meanwhile (its connection went) is not answered."""
        answered: LaterAnswer = LaterAnswer()

        def served() -> None:
            if answered.done():
                return
            try:
                answered.set_result(answer())
            except Exception as error:  # noqa: BLE001 - the connection closes on it, as for a coroutine's
                answered.set_exception(error)

        self.park_callback(keys, deadline_ms, served, ready)
        return answered

    def wake(self, key: Hashable) -> None:
        """The partition `key` changed (leader, or gone): every fetch parked under it is due."""
        self._release(self._delayed.complete(key))

    def check(self, key: Hashable) -> None:
        """Progress on `key` (records appended, the high watermark moved): the fetches parked
        under it that it satisfies are due."""
        self._release(self._delayed.check(key))

    def answer_due(self) -> bool:
        """Run the callbacks of the fetches made due since last called; whether there were any."""
        if not self._due:
            return False
        while self._due:
            due, self._due = self._due, []
            for callback in due:
                callback()
        return True

    def _release(self, due: list[Due]) -> None:
        if not due:
            return
        self._due += due
        if not self._run_scheduled:
            self._run_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_run)

    def _scheduled_run(self) -> None:
        self._run_scheduled = False
        self.answer_due()

    def _arm(self) -> None:
        self._timer.arm(self._delayed.next_deadline())

    def _expire(self, now_ms: int) -> None:
        """A timer's callback ends no connection's step: the expired fetches are answered here."""
        self._due += self._delayed.expire(now_ms)
        self._arm()
        self.answer_due()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
