"""The end of the current step: work that an event gives rise to, done once the step that
handles it is over, not a loop turn later.

A step is one connection dispatching the requests it has read (`KafkaConnection._drain`). A
produce that makes parked fetches due, or a follower fetch that completes acks=all produces,
gives answers to other connections; done at once, each would go out alone (a parked follower
fetch answered with the first record of a burst, each produce response in its own write), and
done through futures, each would wait a loop turn behind whatever that turn carries. Deferred
to the end of the step, the burst's records go out in one answer and each connection's answers
in one write, with no loop turn in between. Outside a step (a timer, a peer's answer) deferred
work runs at once.

One event loop runs per thread, so the steps are kept per thread.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("gregor.step")


class _Steps(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        self.deferred: list[Callable[[], None]] = []


_steps = _Steps()


def at_end(work: Callable[[], None]) -> None:
    """Run `work` when the current step ends, or now outside a step."""
    if _steps.depth:
        _steps.deferred.append(work)
    else:
        work()


class Step:
    """A step: `with Step(): ...`; the outermost one runs the deferred work when it ends, in the
    order it was deferred (work deferred meanwhile included)."""

    __slots__ = ()

    def __enter__(self) -> None:
        _steps.depth += 1

    def __exit__(self, *_exc: object) -> None:
        steps = _steps
        if steps.depth > 1:
            steps.depth -= 1
            return
        try:
            deferred = steps.deferred
            index = 0
            while index < len(deferred):  # work run here may defer more: it runs in this step's end
                try:
                    deferred[index]()
                except Exception:  # noqa: BLE001 - one answer's failure must not drop the others'
                    log.exception("work deferred to the end of a step failed")
                index += 1
        finally:
            steps.deferred = []
            steps.depth = 0
