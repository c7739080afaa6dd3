"""The asyncio edge of the replication layer's fetch purgatory (`DelayedFetches`).

A fetch parks with a token, released when an event on one of its partitions makes it due (a
change of the partition, `wake`; progress on it that satisfies the fetch's condition, `check`)
or its max wait ends; one timer, armed for the earliest deadline, expires them. The decisions
stay in the sans-IO purgatory, which the replication simulator runs too.

A consumer's or follower's fetch parks with the function that answers it (`park_answer`): the
event that makes it due has it read and encoded at the end of its step (`step`: once the
connection whose requests made it due has dispatched them all, so that a burst of produces
goes out in one answer), instead of through a future whose callback runs a loop turn later,
behind whatever else that turn carries. Kafka completes a DelayedFetch in the thread of the
produce or fetch that satisfied it.
"""

from __future__ import annotations

import asyncio
from typing import Callable, Hashable, Iterable, Union

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.network import LaterAnswer
from gregor.broker.step import at_end
from gregor.replication.delayed_fetch import Condition, DelayedFetches


class _Answer:
    """A parked fetch that is answered the moment it is released."""

    __slots__ = ("answered", "answer")

    def __init__(self, answered: LaterAnswer, answer: Callable[[], object]) -> None:
        self.answered = answered
        self.answer = answer

    def release(self) -> None:
        answered = self.answered
        if answered.done():  # cancelled: its connection went
            return
        try:
            answered.set_result(self.answer())
        except Exception as error:  # noqa: BLE001 - the connection closes on it, as for a coroutine's
            answered.set_exception(error)


_Token = Union[asyncio.Future, _Answer]


class FetchPurgatory:
    def __init__(self, clock_ms: Clock = wall_clock_ms) -> None:
        self._delayed: DelayedFetches[_Token] = DelayedFetches()
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

    def park_answer(self, keys: Iterable[Hashable], deadline_ms: int, answer: Callable[[], object],
                    ready: Condition | None = None) -> LaterAnswer:
        """`park`, for a fetch whose answer `answer()` gives once it is due: called by the event
        that makes it due, in its step, and encoded as it is given (`LaterAnswer`). Cancelling
        the result (its connection went) leaves nothing to answer."""
        answered = LaterAnswer(loop=asyncio.get_running_loop())
        self._delayed.park(keys, deadline_ms, _Answer(answered, answer), ready)
        self._arm()
        return answered

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


def _release(tokens: list[_Token]) -> None:
    for token in tokens:
        if isinstance(token, _Answer):
            at_end(token.release)
        elif not token.done():
            token.set_result(None)
