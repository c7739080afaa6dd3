"""An asyncio client belongs to the event loop it was first used on.

Its connections, sender, fetcher and heartbeat are tasks and protocols of that loop (no thread
of its own), so using it from another loop, or after that loop ended, can only fail in obscure
ways; `LoopBinding` turns that into one clear error instead.
"""

from __future__ import annotations

import asyncio

from gregor.client.errors import ClientErrorCode, KafkaException


class LoopBinding:
    """The loop a client runs on, set by the first call made inside a running loop."""

    def __init__(self, what: str) -> None:
        self._what = what
        self.loop: asyncio.AbstractEventLoop | None = None

    def bind(self) -> bool:
        """Bind to the running loop; True the first time (the caller then starts its tasks)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise KafkaException(ClientErrorCode._STATE,
                                 f"the asyncio {self._what} must be used inside a running event loop") from None
        if self.loop is None:
            self.loop = loop
            return True
        if self.loop is not loop:
            raise KafkaException(ClientErrorCode._STATE,
                                 f"this asyncio {self._what} belongs to another event loop (one client per loop)")
        return False


def check_timeout(value: object, name: str = "timeout") -> float | None:
    """A timeout in seconds: None or a non-negative number (TypeError naming it otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must not be negative: {value}")
    return float(value)


def check_optional_int(value: object, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"{name} must be an int or None, not {type(value).__name__}")
