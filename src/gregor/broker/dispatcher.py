"""Request dispatch: header parsing, version checks, handler lookup, error answers.

Each handler module (gregor.broker.handlers.*) declares the API it serves and the versions it
honours; ApiVersions advertises exactly those. A request that cannot be decoded is answered
by closing the connection, as Kafka does. Bytes after a request's last field are ignored, as
Kafka's own parser does (librdkafka sends such bytes with some Metadata versions).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from typing import Any, Awaitable, Callable, Generic, Mapping, TypeVar

from gregor.broker.clock import Clock
from gregor.broker.handlers import Handler, RequestContext
from gregor.broker.network import CloseConnection, ConnectionInfo, LaterAnswer, Pipelined, Throttled
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.headers import encode_response, read_request_header
from gregor.protocol.messages import REQUESTS, Message, RequestHeader
from gregor.protocol.primitives import Reader

log = logging.getLogger("gregor.dispatcher")

C = TypeVar("C", bound=RequestContext)
ContextFactory = Callable[[RequestHeader, ConnectionInfo, Mapping[int, Handler[Any]], int], C]
#: Called with each request's context, request, answer and the seconds its handler ran; returns the
#: answer to send (the client listener's request-time quota, `request_quota`).
AfterHandler = Callable[[C, Any, object, float], object]


class Dispatcher(Generic[C]):
    """Answers frames with a handler table; `new_context` makes the context its handlers take
    (a broker listener's with the broker's services, a controller listener's with the quorum)."""

    def __init__(self, handlers: Mapping[int, Handler[C]], new_context: ContextFactory[C], clock: Clock,
                 on_request: Callable[[int, float], None] | None = None,
                 after_handler: AfterHandler[C] | None = None, step_done: Callable[[], None] | None = None) -> None:
        """`clock`: the time each request is handled at (its context's `now_ms`). `step_done`
        carries out what handlers that gather left for the end of a connection's step (the
        broker's acks=all appends, `GatheredAppends.flush`): it runs then, and before a request
        whose handler does not gather, so that no request finds the log behind its order."""
        self._handlers = handlers
        self._new_context = new_context
        self._clock = clock
        self._on_request = on_request
        self._after_handler = after_handler
        self._step_done = step_done

    def step_done(self) -> None:
        if self._step_done is not None:
            self._step_done()

    def dispatch(self, frame: bytearray, info: ConnectionInfo) -> object:
        reader = Reader(memoryview(frame))
        try:
            header = read_request_header(reader)
        except DecodeError as error:
            raise CloseConnection(f"unreadable request header: {error}") from None
        api_key = header.request_api_key
        version = header.request_api_version
        handler = self._handlers.get(api_key)
        if handler is None:
            raise CloseConnection(f"unsupported API key {api_key}")
        if not handler.gathers and self._step_done is not None:
            self._step_done()
        if not handler.min_version <= version <= handler.max_version:
            if handler.unsupported_version_response is not None:
                return self._encode(header, handler.unsupported_version_response(), 0)
            raise CloseConnection(f"unsupported version {version} of API key {api_key}")
        request_class = REQUESTS[api_key]
        try:
            request = request_class.decode(reader, version)
        except DecodeError as error:
            log.info("closing connection from %s: malformed %s v%d: %s",
                     info.peer, request_class.__name__, version, error)
            raise CloseConnection(f"malformed {request_class.__name__}") from None
        context = self._new_context(header, info, self._handlers, self._clock())
        started = time.perf_counter()
        result = handler.handle(context, request)
        if self._after_handler is not None:
            result = self._after_handler(context, request, result, time.perf_counter() - started)
        if isinstance(result, Throttled):  # a client over its quota: the connection mutes itself
            return Throttled(self._finish(header, result.answer, version, started), result.delay_ms)
        return self._finish(header, result, version, started)

    def _finish(self, header: RequestHeader, result: object, version: int, started: float) -> object:
        api_key = header.request_api_key
        # answered now, as most requests are: before the awaitable checks (an ABC's takes 1-2 µs)
        if result is None or isinstance(result, Message):
            self._answered(api_key, started)
            return None if result is None else self._encode(header, result, version)
        if isinstance(result, Pipelined):
            return Pipelined(self._finish_pipelined(header, result.awaitable, version, started))
        if isinstance(result, LaterAnswer):
            result.encode = functools.partial(self._encode_later, header, version, started)
            return result
        if isinstance(result, asyncio.Future):
            return self._chained(header, result, version, started)
        if inspect.isawaitable(result):
            return self._finish_later(header, result, version, started)
        self._answered(api_key, started)
        return None if result is None else self._encode(header, result, version)

    async def _finish_later(self, header: RequestHeader, pending: Awaitable[object], version: int,
                            started: float) -> list[bytes] | Throttled | None:
        return self._encode_later(header, version, started, await pending)

    def _finish_pipelined(self, header: RequestHeader, pending: Awaitable[object], version: int,
                          started: float) -> Awaitable[list[bytes] | Throttled | None]:
        """The encoded answer of a pipelined request."""
        if isinstance(pending, LaterAnswer):
            pending.encode = functools.partial(self._encode_later, header, version, started)
            return pending
        if not isinstance(pending, asyncio.Future):
            return self._finish_later(header, pending, version, started)
        return self._chained(header, pending, version, started)

    def _chained(self, header: RequestHeader, pending: asyncio.Future[object], version: int,
                 started: float) -> asyncio.Future[list[bytes] | Throttled | None]:
        """The encoded answer of a future one, chained by a callback, without the task a
        coroutine would need (one per acks=all produce, one per parked fetch)."""
        encoded: asyncio.Future[list[bytes] | Throttled | None] = pending.get_loop().create_future()

        def done(answer: asyncio.Future[object]) -> None:
            if encoded.done():
                return
            if answer.cancelled():
                encoded.cancel()
                return
            try:
                encoded.set_result(self._encode_later(header, version, started, answer.result()))
            except Exception as error:  # noqa: BLE001 - the connection closes on it, as for a coroutine's
                encoded.set_exception(error)

        def abandoned(answer: asyncio.Future[list[bytes] | Throttled | None]) -> None:
            if answer.cancelled():  # the connection went: whatever waits for the answer may stop
                pending.cancel()

        pending.add_done_callback(done)
        encoded.add_done_callback(abandoned)
        return encoded

    def _encode_later(self, header: RequestHeader, version: int, started: float,
                      response: object) -> list[bytes] | Throttled | None:
        """A `LaterAnswer`'s response, encoded as it is given."""
        self._answered(header.request_api_key, started)
        if isinstance(response, Throttled):
            inner = response.answer
            return Throttled(None if inner is None else self._encode(header, inner, version), response.delay_ms)
        return None if response is None else self._encode(header, response, version)

    def _answered(self, api_key: int, started: float) -> None:
        if self._on_request is not None:
            self._on_request(api_key, time.perf_counter() - started)

    @staticmethod
    def _encode(header: RequestHeader, response: object, version: int) -> list[bytes]:
        return encode_response(header.correlation_id, response, header.request_api_key, version)
