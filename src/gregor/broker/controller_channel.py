"""Requests from a broker to the active controller (Kafka's NodeToControllerChannelManager).

The broker does not know for sure which voter leads the quorum, so each request goes to the best
guess (the leader its metadata log names, else the next voter in turn) and is sent again to the
next guess when the answer is NOT_CONTROLLER, the connection fails or no answer comes within
`controller.quorum.request.timeout.ms`, until the caller's deadline. One connection per voter,
opened when first needed, one request at a time on it (broker-to-controller traffic is a
heartbeat every few seconds and the odd forwarded admin request).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Callable

from gregor.broker.peer_channel import RequestConnection
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import DecodeError, KafkaError
from gregor.protocol.messages._base import Struct

log = logging.getLogger("gregor.broker")
NO_LEADER = -1


def says_not_controller(response: Any) -> bool:
    """Whether any error code in the answer, at any depth, is NOT_CONTROLLER: a forwarded admin
    request reports it per topic or resource, not at the top."""
    for name in type(response).__slots__:
        value = getattr(response, name, None)
        if name == "error_code" and value == ErrorCode.NOT_CONTROLLER:
            return True
        if isinstance(value, Struct) and says_not_controller(value):
            return True
        if isinstance(value, list) and value and isinstance(value[0], Struct) and any(
                says_not_controller(item) for item in value):
            return True
    return False


class ControllerChannel:
    def __init__(self, voters: dict[int, tuple[str, int]], client_id: str,
                 leader_hint: Callable[[], int] = lambda: NO_LEADER, request_timeout_ms: int = 2000,
                 retry_backoff_ms: int = 100) -> None:
        self._connections = {node: RequestConnection(host, port) for node, (host, port) in voters.items()}
        self._order = itertools.cycle(sorted(voters))
        self._client_id = client_id
        self._leader_hint = leader_hint
        self._request_timeout_s = request_timeout_ms / 1000
        self._retry_backoff_s = retry_backoff_ms / 1000
        self._correlation_ids = itertools.count(1)
        self._last_good = NO_LEADER

    def _target(self, previous: int) -> int:
        hint = self._leader_hint()
        if hint in self._connections and hint != previous:
            return hint
        if self._last_good in self._connections and self._last_good != previous:
            return self._last_good
        target = next(self._order)
        return next(self._order) if target == previous and len(self._connections) > 1 else target

    async def send(self, request: Any, version: int, timeout_s: float) -> Any:
        """The active controller's answer to `request`. KafkaError REQUEST_TIMED_OUT when no
        controller answered (other than NOT_CONTROLLER) within `timeout_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        target = NO_LEADER
        while True:
            target = self._target(target)
            try:
                response = await asyncio.wait_for(
                    self._connections[target].call(next(self._correlation_ids), self._client_id, request, version),
                    min(self._request_timeout_s, max(deadline - loop.time(), 0.001)))
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, DecodeError) as error:
                log.debug("controller %d did not answer %s: %s", target, type(request).__name__, error)
                self._last_good = NO_LEADER
            else:
                if not says_not_controller(response):
                    self._last_good = target
                    return response
                self._last_good = NO_LEADER
            if loop.time() + self._retry_backoff_s >= deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                 f"no active controller answered {type(request).__name__} within {timeout_s:.1f} s")
            await asyncio.sleep(self._retry_backoff_s)

    async def close(self) -> None:
        for connection in self._connections.values():
            await connection.wait_closed()
