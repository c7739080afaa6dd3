"""When a parked fetch's answer is made: at the end of the step whose event made it due (an
append, a follower fetch that moved a high watermark), never inside the event itself (a high
watermark moves from inside a partition's update), and in the next loop iteration when no step
ends (a metadata change); at once when its max wait ends."""

from __future__ import annotations

import asyncio

from gregor.broker.fetch_purgatory import FetchPurgatory

FAR_MS = 60_000


def test_a_fetch_an_event_makes_due_is_served_when_the_step_ends():
    async def run() -> None:
        purgatory = FetchPurgatory()
        served: list[str] = []
        purgatory.park_callback([("t", 0)], purgatory.now_ms() + FAR_MS, lambda: served.append("t-0"))
        purgatory.park_callback([("t", 1)], purgatory.now_ms() + FAR_MS, lambda: served.append("t-1"))
        purgatory.check(("t", 0))
        assert served == [], "not inside the event"
        assert purgatory.answer_due() and served == ["t-0"]
        assert not purgatory.answer_due() and len(purgatory) == 1
        await asyncio.sleep(0)
        assert served == ["t-0"], "served once"
    asyncio.run(run())


def test_without_a_step_end_the_fetch_is_served_in_the_next_loop_iteration():
    async def run() -> None:
        purgatory = FetchPurgatory()
        served: list[str] = []
        purgatory.park_callback([("t", 0)], purgatory.now_ms() + FAR_MS, lambda: served.append("woken"))
        purgatory.wake(("t", 0))
        assert served == []
        await asyncio.sleep(0)
        assert served == ["woken"]
    asyncio.run(run())


def test_a_condition_keeps_the_fetch_parked_and_its_max_wait_serves_it():
    async def run() -> None:
        purgatory = FetchPurgatory()
        served: list[str] = []
        purgatory.park_callback([("t", 0)], purgatory.now_ms() + 30, lambda: served.append("expired"),
                                ready=lambda: False)
        purgatory.check(("t", 0))
        assert not purgatory.answer_due() and len(purgatory) == 1
        await asyncio.sleep(0.2)
        assert served == ["expired"] and len(purgatory) == 0
    asyncio.run(run())


def test_an_answer_its_connection_gave_up_is_not_made():
    async def run() -> None:
        purgatory = FetchPurgatory()
        made: list[str] = []
        answer = purgatory.answer_when_due([("t", 0)], purgatory.now_ms() + FAR_MS, lambda: made.append("read"))
        answer.cancel()  # the connection went
        purgatory.check(("t", 0))
        purgatory.answer_due()
        assert made == [] and len(purgatory) == 0
    asyncio.run(run())


def test_fetches_served_at_a_step_end_that_make_others_due_are_served_in_that_step_end_too():
    async def run() -> None:
        purgatory = FetchPurgatory()
        served: list[str] = []

        def first() -> None:
            served.append("first")
            purgatory.check(("t", 1))

        purgatory.park_callback([("t", 0)], purgatory.now_ms() + FAR_MS, first)
        purgatory.park_callback([("t", 1)], purgatory.now_ms() + FAR_MS, lambda: served.append("second"))
        purgatory.check(("t", 0))
        purgatory.answer_due()
        assert served == ["first", "second"]
    asyncio.run(run())
