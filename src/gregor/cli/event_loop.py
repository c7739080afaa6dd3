"""Which asyncio event loop runs a Gregor process.

uvloop (libuv under asyncio's API) when it is installed, which it is with Gregor on Linux and
macOS: on a 3-broker cluster under a fixed-rate acks=all load it gives lower latency for the same
CPU (README, "Event loop: uvloop beside asyncio"). `GREGOR_EVENT_LOOP=asyncio` chooses the
default loop; `GREGOR_EVENT_LOOP=uvloop` insists on uvloop and fails where it is missing. uvloop has
no native `loop.sendfile`: the network edge then calls sendfile itself (`KafkaConnection`).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")

ENVIRONMENT_KEY = "GREGOR_EVENT_LOOP"
CHOICES = ("uvloop", "asyncio")


class EventLoopError(Exception):
    """The loop asked for cannot be used."""


def chosen_loop() -> str:
    """The loop this process will run: the environment's choice, else uvloop when installed."""
    wanted = os.environ.get(ENVIRONMENT_KEY, "").strip().lower()
    if wanted and wanted not in CHOICES:
        raise EventLoopError(f"{ENVIRONMENT_KEY}={wanted!r}: choose one of {', '.join(CHOICES)}")
    if wanted == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if wanted == "uvloop":
            raise EventLoopError(f"{ENVIRONMENT_KEY}=uvloop but uvloop is not installed") from None
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T], loop: str) -> T:
    """`asyncio.run(main)` on `loop` (one of CHOICES, as `chosen_loop` answers)."""
    if loop == "uvloop":
        import uvloop
        return uvloop.run(main)
    return asyncio.run(main)
