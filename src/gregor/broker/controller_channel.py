"""Requests from a broker to the active controller (Kafka's NodeToControllerChannelManager).

The broker does not know for sure which voter leads the quorum, so each request goes to the best
guess (the leader its metadata log names, else the next voter in turn) and is sent again to the
next guess when the answer is NOT_CONTROLLER, the connection fails or no answer comes within
`controller.quorum.request.timeout.ms`, until the caller's deadline. One connection per voter,
opened when first needed, one request at a time on it (broker-to-controller traffic is a
heartbeat every few seconds and the odd forwarded admin request).

The embedded single node reaches its own one-voter quorum the same way, through a
`LocalConnection`: the request is encoded at its version and handed to the controller's
dispatcher in this process, and the answer decoded from the bytes it returns, as they would
cross a socket. So a single node and a cluster share one path from a broker to its controller.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from typing import Any, Callable, Mapping, Protocol, TypeVar

from gregor.broker.authorization import IN_PROCESS_BROKER
from gregor.broker.network import CloseConnection, ConnectionInfo, Dispatcher, Pipelined
from gregor.broker.peer_channel import RequestConnection, decode_response
from gregor.broker.security.listener_security import OutboundSecurity
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import DecodeError, KafkaError
from gregor.protocol.headers import encode_request
from gregor.protocol.messages._base import Message, Struct

log = logging.getLogger("gregor.broker")
NO_LEADER = -1
M = TypeVar("M", bound=Message)


def answer_as(kind: type[M], response: Message) -> M:
    """The controller's answer as the response type of the request sent (what the channel decodes
    by the request's API key, so anything else is a broken invariant, not a peer's error)."""
    if not isinstance(response, kind):
        raise TypeError(f"expected {kind.__name__} from the controller, got {type(response).__name__}")
    return response


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


class VoterConnection(Protocol):
    """How requests reach one voter: a socket (`RequestConnection`) or this process (`LocalConnection`)."""

    async def call(self, correlation_id: int, client_id: str, request: Any, version: int) -> Any: ...

    async def wait_closed(self) -> None: ...


class LocalConnection:
    """The controller of this process, reached through its dispatcher with the request's bytes."""

    def __init__(self, dispatcher: Dispatcher, node_id: int) -> None:
        self._dispatcher = dispatcher
        self._info = ConnectionInfo(f"in-process broker {node_id}", "CONTROLLER", 0, IN_PROCESS_BROKER)

    async def call(self, correlation_id: int, client_id: str, request: Any, version: int) -> Any:
        frame = encode_request(correlation_id, client_id, request, version)
        try:
            result = self._dispatcher.dispatch(bytearray(frame[4:]), self._info)
            if isinstance(result, Pipelined):
                result = result.awaitable
            if inspect.isawaitable(result):
                result = await result
        except CloseConnection as reason:
            raise DecodeError(f"the controller closed the request: {reason}") from None
        if not isinstance(result, list):  # every controller API answers, as encoded chunks
            raise DecodeError(f"the controller did not answer {type(request).__name__}")
        answered, response = decode_response(memoryview(b"".join(bytes(part) for part in result)[4:]),
                                             request.API_KEY, version)
        if answered != correlation_id:
            raise DecodeError(f"response to correlation id {answered}, not {correlation_id}")
        return response

    async def wait_closed(self) -> None:
        return None


class ControllerChannel:
    def __init__(self, voters: Mapping[int, VoterConnection], client_id: str,
                 leader_hint: Callable[[], int] = lambda: NO_LEADER, request_timeout_ms: int = 2000,
                 retry_backoff_ms: int = 100) -> None:
        """`voters`: how to reach each voter (`over_sockets` makes them from their addresses)."""
        self._connections = dict(voters)
        self._order = itertools.cycle(sorted(voters))
        self._client_id = client_id
        self._leader_hint = leader_hint
        self._request_timeout_s = request_timeout_ms / 1000
        self._retry_backoff_s = retry_backoff_ms / 1000
        self._correlation_ids = itertools.count(1)
        self._last_good = NO_LEADER

    @classmethod
    def over_sockets(cls, voters: Mapping[int, tuple[str, int]], security: OutboundSecurity, client_id: str,
                     **settings: Any) -> ControllerChannel:
        """A channel to the voters at these addresses (`controller.quorum.voters`), secured as their
        controller listener asks."""
        return cls({node: RequestConnection(host, port, security) for node, (host, port) in voters.items()},
                   client_id, **settings)

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
