"""The asyncio edge of the replication layer's fetch purgatory (`DelayedFetches`).

A fetch parks with a future, completed when an event on one of its partitions makes it due (a
change of the partition, `wake`; progress on it that satisfies the fetch's condition, `check`)
or its max wait ends; one timer, armed for the earliest deadline, expires them. The decisions
stay in the sans-IO purgatory, which the replication simulator runs too.
"""

from __future__ import annotations

import asyncio
from typing import Callable, Hashable, Iterable

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.network import LaterAnswer
from gregor.replication.delayed_fetch import Condition, DelayedFetches


class FetchPurgatory:
    def __init__(self, clock_ms: Clock = wall_clock_ms) -> None:
        self._delayed: DelayedFetches[asyncio.Future[None]] = DelayedFetches()
        self._clock_ms = clock_ms
        self._timer = DeadlineTimer(clock_ms, self._expire)

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
        self._delayed.park(keys, deadline_ms, future, ready)
        self._arm()
        return future

    def wake(self, key: Hashable) -> None:
        """The partition `key` changed (leader, or gone): every fetch parked under it is due."""
        _release(self._delayed.complete(key))

    def check(self, key: Hashable) -> None:
        """Progress on `key` (records appended, the high watermark moved): the fetches parked
        under it that it satisfies are due."""
        _release(self._delayed.check(key))

    def _arm(self) -> None:
        self._timer.arm(self._delayed.next_deadline())

    def _expire(self, now_ms: int) -> None:
        _release(self._delayed.expire(now_ms))
        self._arm()


def _release(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)


def answer_when_due(due: asyncio.Future[None], answer: Callable[[], object]) -> LaterAnswer:
    """What `answer()` returns once the parked fetch is `due`, given by a callback: no task per
    parked fetch (two per replication round on a leader, one per record a caught-up consumer
    reads); the answer is encoded as it is given (`LaterAnswer`). Cancelling the result (its
    connection went) cancels `due`, which the purgatory then drops."""
    answered: LaterAnswer = LaterAnswer(loop=due.get_loop())

    def served(_: asyncio.Future[None]) -> None:
        if answered.done():
            return
        if due.cancelled():
            answered.cancel()
            return
        try:
            answered.set_result(answer())
        except Exception as error:  # noqa: BLE001 - the connection closes on it, as for a coroutine's
            answered.set_exception(error)

    def abandoned(_: LaterAnswer) -> None:
        if answered.cancelled():
            due.cancel()

    due.add_done_callback(served)
    answered.add_done_callback(abandoned)
    return answered
