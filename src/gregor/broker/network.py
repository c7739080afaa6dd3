"""The network edge: Kafka framing over asyncio, one receive buffer per connection.

Requests on one connection are answered strictly in order (Kafka's clients match responses by
order as well as correlation id). Synchronous handlers answer inline from `buffer_updated`. A
handler that must wait returns an awaitable, and later requests of that connection queue behind
it, as Kafka mutes a channel while a request is in flight (a long-poll fetch, a group join).

A handler whose request has had all its effects and only waits for its answer (an acks=all
produce, appended and waiting for the high watermark) returns it wrapped in `Pipelined`: the
connection goes on dispatching the requests behind it, up to `_MAX_PIPELINED` answers
outstanding, and sends the answers in order as they come. Kafka mutes the channel for these
too, so a producer with several requests in flight has each one wait for the replication of the
one before: one replication round trip per request, which caps a connection at a few thousand
small acks=all requests a second in Python (librdkafka at linger.ms=0 sends one request per
record). The records are appended in the same order either way; only the waiting overlaps.

An answer to a client over its quota comes wrapped in `Throttled`: it is sent as usual, and the
connection dispatches none of the client's next requests until the throttle time has passed
(Kafka's muted channel, KIP-219).

Input limits (Kafka's keys, `ConnectionLimits`): a frame announcing more than
`socket.request.max.bytes` closes the connection before anything is allocated for it, and the
receive buffer of an announced frame grows with the bytes that arrive, never to the announced size
at once, so a peer that announces a large frame and sends nothing costs nothing. A connection over
`max.connections` or `max.connections.per.ip` is closed as soon as it is accepted, and one with no
bytes read or written for `connections.max.idle.ms` (and no request of its own in flight) is closed
by the server's reaper; a slow sender that keeps sending is not idle, as in Kafka.

Security (`ListenerTransport`): a TLS listener upgrades each accepted connection with
`loop.start_tls` before it reads a byte, so a failed handshake (a plaintext client on a TLS port,
a certificate from another CA) is logged once with the peer's address and closes only that
connection; the principal of a client certificate comes from the listener's mapping. A SASL
listener wraps the dispatcher per connection in an authenticator, which answers only the SASL
exchange until it has set the connection's principal. A fetch's file regions go out with
`sendfile` on a plaintext socket; over TLS they are copied through the TLS transport in chunks.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import socket
import ssl
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Protocol, Sequence

log = logging.getLogger("gregor.network")

_SIZE = struct.Struct(">i")
_INITIAL_BUFFER = 64 * 1024
_MAX_IDLE_BUFFER = 1024 * 1024
_MAX_QUEUED_REQUESTS = 64
_MAX_PIPELINED = 64
# what the dispatcher gives for a request answered at once (encoded parts; None: no answer): told
# apart before `inspect.isawaitable`, an ABC check of 1-2 µs
_ENCODED = (list, bytes, bytearray, memoryview, type(None))
_COPY_CHUNK = 1024 * 1024  # file bytes copied per write where sendfile cannot take them

Response = "bytes | Sequence[bytes] | None"


class FileRegion:
    """Byte ranges of files that go to the socket with sendfile, never through Python buffers.

    The codec treats it as an opaque part of `len()` bytes; `slices` are objects with `file`,
    `position` and `length` (the storage layer's FileSlice).
    """

    __slots__ = ("slices", "_size")

    def __init__(self, slices: Sequence) -> None:
        self.slices = tuple(slices)
        self._size = sum(piece.length for piece in self.slices)

    def __len__(self) -> int:
        return self._size


#: The principal of an unauthenticated connection (a PLAINTEXT or SSL listener without client auth).
ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"


class ConnectionInfo:
    """What handlers may know about the peer of a request."""

    __slots__ = ("peer", "listener", "connection_id", "principal")

    def __init__(self, peer: str, listener: str, connection_id: int,
                 principal: str = ANONYMOUS_PRINCIPAL) -> None:
        self.peer = peer
        self.listener = listener
        self.connection_id = connection_id
        #: Kafka's principal string ("User:alice"); authentication sets it, authorization reads it.
        self.principal = principal


class Dispatcher(Protocol):
    def dispatch(self, frame: bytearray, info: ConnectionInfo) -> object:
        """Answer one request frame (without its size prefix).

        Returns the encoded response (bytes or a list of chunks, size prefix included), None
        for no response (acks=0 produce), an awaitable of either, or raises
        `CloseConnection` when the protocol has no way to answer.
        """

    def step_done(self) -> None:
        """The connection dispatched what it could for now: carry out the work its requests
        left for the end of the step (the broker's gathered acks=all appends)."""


class Pipelined:
    """An answer that only waits: the request's effects are done, so the connection may dispatch
    the requests behind it before this one is answered (answers still go out in order)."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[object]) -> None:
        self.awaitable = awaitable


class LaterAnswer(asyncio.Future):
    """A handler's answer that comes later, encoded the moment it is given: the dispatcher sets
    `encode` when the handler returns it, so the connection's done-callback, the only one
    scheduled, finds the bytes ready (each future chained to another costs a loop iteration).
    `given`, set by the connection waiting for it, is told at once."""

    encode: Callable[[Any], Any] | None = None
    given: Callable[[], None] | None = None

    def set_result(self, result: Any) -> None:
        if self.encode is not None:
            try:
                result = self.encode(result)
            except Exception as error:  # noqa: BLE001 - the connection closes on it, as on a coroutine's
                super().set_exception(error)
                return
        super().set_result(result)
        if self.given is not None:
            self.given()


#: Connections given a later answer during the current step of some connection: written when
#: that step ends (`_write_given`), not a loop iteration later, after other connections' reads
_given: dict["KafkaConnection", None] = {}


def _write_given() -> None:
    """Write the later answers given during the step that just ended (an append woke a follower's
    fetch; a follower's fetch moved a high watermark and completed a produce and a consumer's
    fetch): one write per connection for all of them."""
    while _given:
        connections = list(_given)
        _given.clear()
        for connection in connections:
            connection._flush()


class Throttled:
    """An answer (any of the dispatcher's kinds) from a client over its quota: it is sent as usual,
    and the connection dispatches no further request of the client for `delay_ms` (Kafka mutes
    the channel for the throttle time, KIP-219)."""

    __slots__ = ("answer", "delay_ms")

    def __init__(self, answer: object, delay_ms: int) -> None:
        self.answer = answer
        self.delay_ms = delay_ms


class CloseConnection(Exception):
    """Raised by a dispatcher when the only correct answer is to close the connection: at once, or
    after `answer` (an encoded response) has gone out `delay_s` seconds later (a failed
    authentication, as `connection.failed.authentication.delay.ms` asks)."""

    def __init__(self, reason: str, answer: Sequence[bytes] | None = None, delay_s: float = 0.0) -> None:
        super().__init__(reason)
        self.answer = answer
        self.delay_s = delay_s


@dataclass(frozen=True)
class ListenerTransport:
    """How a listener secures its connections: a TLS context (None: plaintext), the principal of
    a verified client certificate (its subject, RFC 2253 text, to a principal; None: anonymous),
    and a per-connection wrapper of the dispatcher that authenticates first (SASL)."""

    ssl_context: ssl.SSLContext | None = None
    certificate_principal: Callable[[str], str] | None = None
    authenticate: Callable[[Dispatcher], Dispatcher] | None = None


@dataclass(frozen=True)
class SocketBuffers:
    """`socket.send.buffer.bytes` / `socket.receive.buffer.bytes` of a listener (-1: the OS's
    own, autotuned: Gregor's default, where Kafka's is 100 KB)."""

    send: int = -1
    receive: int = -1

    def apply(self, sock: socket.socket, send: bool = True) -> None:
        """Set the sizes on a socket (a listening one takes only the receive size, which the
        connections it accepts inherit before their window is announced)."""
        for option, size in ((socket.SO_SNDBUF, self.send if send else -1), (socket.SO_RCVBUF, self.receive)):
            if size >= 0:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, option, size)
                except OSError as error:
                    log.warning("cannot set the socket buffer size to %d bytes: %s", size, error)


UNLIMITED = 2**31 - 1  # Kafka's Int.MaxValue default of the connection counts


@dataclass(frozen=True)
class ConnectionLimits:
    """`max.connections`, `max.connections.per.ip` (with `max.connections.per.ip.overrides`, by
    address) and `connections.max.idle.ms` of a listener; the defaults are Kafka's."""

    max_connections: int = UNLIMITED
    max_per_ip: int = UNLIMITED
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    max_idle_ms: int = 600_000

    def per_ip(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_per_ip)


@dataclass(frozen=True)
class Held:
    """A new connection held back by a connection creation rate (KIP-612): its requests wait
    `delay_s` and are then served (the broker's rate: accepted late), or it is closed then (an
    IP's rate: Kafka's delayed close, which slows a client's reconnect loop down)."""

    delay_s: float
    close: bool = False


#: Whether a new connection on `listener` from `ip` must be held back; None: serve it now.
ConnectionRateCheck = Callable[[str, str], "Held | None"]


class KafkaConnection(asyncio.BufferedProtocol):
    """One client connection: frame splitting, size limits, ordered responses."""

    _next_id = 0

    def __init__(self, dispatcher: Dispatcher, listener: str, max_request_size: int,
                 on_close: Callable[["KafkaConnection"], None] | None = None,
                 admit: Callable[["KafkaConnection"], "bool | Held"] | None = None,
                 transport: ListenerTransport | None = None, buffers: SocketBuffers | None = None) -> None:
        """`admit` is asked once the peer is known; a connection it refuses is closed at once, one
        it holds waits (`Held`)."""
        self._security = transport or ListenerTransport()
        self._socket_buffers = buffers
        authenticate = self._security.authenticate
        self._dispatcher = dispatcher if authenticate is None else authenticate(dispatcher)
        self._listener = listener
        self._max_request_size = max_request_size
        self._on_close = on_close
        self._admit = admit
        self.peer_ip = ""
        self.last_active = 0.0  # the loop's time of the last byte read or written
        self._buffer = bytearray(_INITIAL_BUFFER)
        self._start = 0
        self._end = 0
        self._queue: deque[bytearray] = deque()
        self._answers: deque[asyncio.Future] = deque()  # in request order, not sent yet
        self._blocking: asyncio.Future | None = None  # an answer the next requests wait for
        self._sending: asyncio.Task | None = None  # file regions going out; later answers wait
        self._transport: asyncio.Transport | None = None
        self._reading_paused = False
        self._writable: asyncio.Future | None = None  # set while the transport's buffer is over its high mark
        self._stopping = False
        self._muted: asyncio.TimerHandle | None = None  # a quota's throttle: no request dispatched
        self._handshake: asyncio.Future | None = None
        self._securing = False  # TLS handshake under way: frames are queued, not dispatched yet
        self._early: bytearray | None = None  # a TLS connection's bytes read before the TLS layer took over
        KafkaConnection._next_id += 1
        self.connection_id = KafkaConnection._next_id
        self.info = ConnectionInfo("(not connected yet)", listener, self.connection_id)  # the peer: connection_made

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            if self._socket_buffers is not None:
                self._socket_buffers.apply(sock)
        peer = transport.get_extra_info("peername")
        peer_text = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.peer_ip = str(peer[0]) if isinstance(peer, tuple) else str(peer)
        self.info = ConnectionInfo(peer_text, self._listener, self.connection_id)
        self.last_active = asyncio.get_running_loop().time()
        admitted = self._admit(self) if self._admit is not None else True
        if admitted is False:
            self._close()
            return
        if isinstance(admitted, Held):
            self._muted = asyncio.get_running_loop().call_later(
                admitted.delay_s, self._close if admitted.close else self._unmute)
        if self._security.ssl_context is not None:
            # not a byte of the handshake may reach the Kafka framing
            transport.pause_reading()  # type: ignore[attr-defined]
            self._reading_paused = True
            self._securing = True
            self._early = bytearray()
            self._handshake = asyncio.ensure_future(self._start_tls(self._security.ssl_context))
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self._hand_over_early_bytes, transport)

    def _hand_over_early_bytes(self, raw: asyncio.BaseTransport) -> None:
        """Give the TLS layer the handshake bytes read before it took over the transport: uvloop
        reads a new connection once even when `connection_made` pauses it. This runs after
        `start_tls` has installed its protocol and started it, before the loop reads again."""
        early, self._early = bytes(self._early or b""), None
        tls: Any = raw.get_protocol()
        if not early or tls is self:
            return
        if hasattr(tls, "get_buffer"):  # both loops' TLS protocols are buffered ones
            view = memoryview(early)
            while view:
                buffer = tls.get_buffer(len(view))
                size = min(len(buffer), len(view))
                buffer[:size] = view[:size]
                tls.buffer_updated(size)
                view = view[size:]
        else:
            tls.data_received(early)

    async def _start_tls(self, context: ssl.SSLContext) -> None:
        """Upgrade the accepted connection to TLS; a failed handshake closes only this connection."""
        raw = self._transport
        assert raw is not None
        try:
            secured = await asyncio.get_running_loop().start_tls(raw, self, context, server_side=True)
        except (OSError, asyncio.TimeoutError) as error:
            log.info("closing connection from %s: TLS handshake failed: %s", self.info.peer,
                     getattr(error, "reason", None) or error or type(error).__name__)
            self._forget_raw(raw)
            return
        except asyncio.CancelledError:  # closed meanwhile: idle, the server stopping
            self._forget_raw(raw)
            raise
        if secured is None or self._transport is None:
            return
        self._transport = secured
        self._securing = False
        self._set_certificate_principal(secured.get_extra_info("ssl_object"))
        self._reading_paused = False
        if self._stopping:
            self.stop_reading()
        self._drain()  # requests that arrived with the end of the handshake, before the transport was known

    def _forget_raw(self, raw: asyncio.BaseTransport) -> None:
        """Close a connection whose handshake did not finish; start_tls gave its transport to a
        protocol of its own, so this one hears of the close only from here."""
        raw.close()
        if self._transport is raw:
            self.connection_lost(None)

    def _set_certificate_principal(self, ssl_object: Any) -> None:
        mapper = self._security.certificate_principal
        certificate = ssl_object.getpeercert() if ssl_object is not None else None
        if mapper is None or not certificate:
            return
        subject = rfc2253_subject(certificate)
        try:
            self.info.principal = mapper(subject)
        except ValueError as error:
            log.warning("closing connection from %s: no principal for certificate %s: %s", self.info.peer,
                        subject, error)
            self._close()

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()
        if self._transport is None:
            return
        self._transport = None
        _given.pop(self, None)
        self._queue.clear()
        for answer in self._answers:
            answer.cancel()
        self._answers.clear()
        self._blocking = None
        if self._sending is not None:
            self._sending.cancel()
        if self._muted is not None:
            self._muted.cancel()
            self._muted = None
        if self._on_close is not None:
            self._on_close(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        free = len(self._buffer) - self._end
        if free < 4096:
            self._compact(max(sizehint, 4096))
        return memoryview(self._buffer)[self._end:]

    def _compact(self, wanted: int) -> None:
        """Move pending bytes to the front, into a larger buffer when `wanted` does not fit.

        The transport may still hold a view of the old buffer, so it is replaced, never resized.
        """
        pending = self._end - self._start
        size = len(self._buffer)
        if pending + wanted > size:
            size = max(pending + wanted, size * 2)
        buffer = bytearray(size)
        buffer[:pending] = self._buffer[self._start:self._end]
        self._buffer = buffer
        self._start, self._end = 0, pending

    def buffer_updated(self, nbytes: int) -> None:
        if self._early is not None:  # TLS bytes read before start_tls took over: theirs, not Kafka frames
            self._early += self._buffer[self._end:self._end + nbytes]
            return
        self._end += nbytes
        self.last_active = asyncio.get_running_loop().time()
        buffer = self._buffer
        while self._end - self._start >= 4:
            (size,) = _SIZE.unpack_from(buffer, self._start)
            if size < 0 or size > self._max_request_size:
                log.warning("closing connection from %s: request size %d outside 0..%d "
                            "(socket.request.max.bytes)", self.info.peer, size, self._max_request_size)
                self._close()
                return
            frame_end = self._start + 4 + size
            if frame_end > self._end:
                break  # get_buffer grows the buffer as the frame's bytes arrive, not to `size` now
            frame = buffer[self._start + 4:frame_end]
            self._start = frame_end
            self._queue.append(frame)
        if self._start == self._end:
            self._start = self._end = 0
            if len(buffer) > _MAX_IDLE_BUFFER:  # a large request went through: give its memory back
                self._buffer = bytearray(_INITIAL_BUFFER)
        self._drain()
        if len(self._queue) >= _MAX_QUEUED_REQUESTS and not self._reading_paused and self._transport is not None:
            self._transport.pause_reading()
            self._reading_paused = True

    def _drain(self) -> None:
        """Dispatch queued requests in order until one must be answered before the next runs."""
        if self._securing:
            return
        ready: list[bytes | bytearray | memoryview] = []  # answers given at once, written together
        try:
            while (self._queue and self._transport is not None and self._blocking is None
                   and self._muted is None and len(self._answers) < _MAX_PIPELINED):
                frame = self._queue.popleft()
                try:
                    result = self._unthrottled(self._dispatcher.dispatch(frame, self.info))
                except CloseConnection as reason:
                    log.info("closing connection from %s: %s", self.info.peer, reason)
                    self._write(ready)
                    self._close_after(reason)
                    return
                if isinstance(result, Pipelined):
                    self._expect(asyncio.ensure_future(result.awaitable))
                elif not isinstance(result, _ENCODED) and inspect.isawaitable(result):
                    self._blocking = asyncio.ensure_future(result)
                    self._expect(self._blocking)
                elif self._answers or self._sending is not None:
                    answered = asyncio.get_running_loop().create_future()
                    answered.set_result(result)
                    self._answers.append(answered)
                else:
                    self._out(result, ready)
        finally:
            self._dispatcher.step_done()
        self._write(ready)
        _write_given()
        if self._reading_paused and not self._queue and self._transport is not None and not self._stopping:
            self._reading_paused = False
            self._transport.resume_reading()

    def _unthrottled(self, result: object) -> object:
        """The answer inside a `Throttled` one, muting the connection for its delay."""
        if not isinstance(result, Throttled):
            return result
        if result.delay_ms > 0 and self._transport is not None:
            if self._muted is not None:
                self._muted.cancel()
            self._muted = asyncio.get_running_loop().call_later(result.delay_ms / 1000, self._unmute)
        return result.answer

    def _unmute(self) -> None:
        self._muted = None
        self._drain()

    def _expect(self, answer: asyncio.Future) -> None:
        self._answers.append(answer)
        answer.add_done_callback(self._answered)
        if isinstance(answer, LaterAnswer):
            answer.given = self._given

    def _given(self) -> None:
        _given[self] = None

    def _answered(self, _answer: asyncio.Future) -> None:
        _given.pop(self, None)
        self._flush()
        self._drain()

    def _flush(self) -> None:
        """Send the answers that are ready, in request order, in one write: on loopback each
        write is a system call that also runs the receiver's side of TCP, a fifth to a third of a
        busy leader's time (answers given at once by `_drain` are written together too)."""
        ready: list[bytes | bytearray | memoryview] = []
        while self._answers and self._sending is None and self._transport is not None:
            answer = self._answers[0]
            if not answer.done():
                break
            self._answers.popleft()
            if answer is self._blocking:
                self._blocking = None
            if answer.cancelled():
                continue
            error = answer.exception()
            if isinstance(error, CloseConnection):
                log.info("closing connection from %s: %s", self.info.peer, error)
                self._close()
                return
            if error is not None:
                log.error("request from %s failed; closing its connection", self.info.peer, exc_info=error)
                self._close()
                return
            self._out(self._unthrottled(answer.result()), ready)
        self._write(ready)

    def _write(self, parts: list[bytes | bytearray | memoryview]) -> None:
        if parts and self._transport is not None:
            self.last_active = asyncio.get_running_loop().time()
            self._transport.writelines(parts)

    def _out(self, result: object, ready: list[bytes | bytearray | memoryview]) -> None:
        """Add an encoded answer to the parts about to be written together; one holding file
        regions goes out after them, asynchronously, and the answers after it wait for it."""
        if result is None:
            return
        if isinstance(result, (bytes, bytearray, memoryview)):
            ready.append(result)
        elif not isinstance(result, list):
            raise TypeError(f"the dispatcher answered {type(result).__name__}, not an encoded response")
        elif any(isinstance(part, FileRegion) for part in result):
            self._write(ready)
            ready.clear()
            self._sending = asyncio.ensure_future(self._send_with_regions(result))
        else:
            ready.extend(result)

    async def _send_with_regions(self, parts: Sequence[FileRegion | bytes | memoryview]) -> None:
        loop = asyncio.get_running_loop()
        try:
            for part in parts:
                if self._transport is None:
                    return
                self.last_active = loop.time()
                if isinstance(part, FileRegion):
                    for piece in part.slices:
                        if self._security.ssl_context is None and isinstance(loop, asyncio.BaseEventLoop):
                            sent = await loop.sendfile(self._transport, piece.file, piece.position, piece.length)
                        else:
                            sent = await self._send_slice(piece.file.fileno(), piece.position, piece.length,
                                                          direct=self._security.ssl_context is None)
                        if sent != piece.length:
                            raise OSError(f"file ended {piece.length - sent} bytes short of the fetched region")
                else:
                    self._transport.write(part)
        except (OSError, ValueError, RuntimeError) as error:
            log.info("closing connection from %s: sending file data failed: %s", self.info.peer, error)
            self._close()
            return
        except asyncio.CancelledError:
            return
        finally:
            self._sending = None
        self._flush()
        self._drain()

    async def _send_slice(self, fd: int, position: int, length: int, direct: bool = True) -> int:
        """sendfile for a loop without a native one (uvloop): straight to the socket while the
        transport has nothing buffered (so nothing can overtake it), the rest copied through the
        transport in chunks, waiting whenever its buffer is over its high mark. Over TLS
        (`direct` false) every byte is copied through the transport, which encrypts it: the
        socket under it must never see file bytes (asyncio's own fallback copies 16 KB at a time)."""
        transport = self._transport
        sock = transport.get_extra_info("socket") if transport is not None else None
        start = position
        end = position + length
        if direct and sock is not None and transport is not None and transport.get_write_buffer_size() == 0:
            while position < end:
                try:
                    sent = os.sendfile(sock.fileno(), fd, position, end - position)
                except (BlockingIOError, InterruptedError):
                    break
                if sent == 0:
                    return position - start
                position += sent
        while position < end and self._transport is not None:
            data = os.pread(fd, min(_COPY_CHUNK, end - position), position)
            if not data:
                break
            self._transport.write(data)
            position += len(data)
            if self._writable is not None:
                await self._writable
        return position - start

    @property
    def queued(self) -> int:
        """Requests read from this connection and not answered yet."""
        return len(self._queue) + len(self._answers) + (1 if self._sending is not None else 0)

    @property
    def busy(self) -> bool:
        """A request read from this connection is still being answered."""
        return self._transport is not None and self.queued > 0

    def stop_reading(self) -> None:
        """Take no new requests (shutdown); those already read are still answered."""
        self._stopping = True
        if self._transport is not None and not self._reading_paused:
            self._transport.pause_reading()
            self._reading_paused = True

    def _close_after(self, reason: CloseConnection) -> None:
        """Close now, or send the closing answer and close `delay_s` later, reading nothing meanwhile."""
        if reason.delay_s <= 0:
            if reason.answer:
                self._write(list(reason.answer))
            self._close()
            return
        self.stop_reading()
        self._queue.clear()

        def close() -> None:
            if reason.answer:
                self._write(list(reason.answer))
            self._close()

        asyncio.get_running_loop().call_later(reason.delay_s, close)

    def _close(self) -> None:
        self._queue.clear()
        if self._handshake is not None and not self._handshake.done():
            self._handshake.cancel()
        if self._transport is not None:
            self._transport.close()


class KafkaServer:
    """Listens on the broker's client endpoints, tracks open connections and enforces the
    connection limits: counts when a connection is accepted, idleness with a periodic reaper."""

    def __init__(self, dispatcher: Dispatcher, max_request_size: int,
                 limits: ConnectionLimits | None = None, connection_rate: ConnectionRateCheck | None = None,
                 on_closed: Callable[[ConnectionInfo], None] | None = None) -> None:
        """`on_closed` is told of every connection that closes (state kept per connection, such
        as share sessions, goes with it)."""
        self._dispatcher = dispatcher
        self._on_closed = on_closed
        self._max_request_size = max_request_size
        self._limits = limits or ConnectionLimits()
        self._connection_rate = connection_rate
        self._servers: list[asyncio.base_events.Server] = []
        self.connections: set[KafkaConnection] = set()
        self._admitted: set[KafkaConnection] = set()
        self._per_ip: dict[str, int] = {}
        self._reaper: asyncio.TimerHandle | None = None

    def _admit(self, connection: KafkaConnection) -> bool | Held:
        limits = self._limits
        ip = connection.peer_ip
        if len(self._admitted) >= limits.max_connections:
            log.warning("closing connection from %s: %d connections open (max.connections)",
                        connection.info.peer, len(self._admitted))
            return False
        if self._per_ip.get(ip, 0) >= limits.per_ip(ip):
            log.warning("closing connection from %s: %d connections open from %s (max.connections.per.ip)",
                        connection.info.peer, self._per_ip[ip], ip)
            return False
        held = self._connection_rate(connection.info.listener, ip) if self._connection_rate is not None else None
        if held is not None and held.close:
            return held  # never counted: it is closed once held
        self._admitted.add(connection)
        self._per_ip[ip] = self._per_ip.get(ip, 0) + 1
        return held or True

    def _closed(self, connection: KafkaConnection) -> None:
        self.connections.discard(connection)
        if self._on_closed is not None:
            self._on_closed(connection.info)
        if connection in self._admitted:
            self._admitted.discard(connection)
            left = self._per_ip[connection.peer_ip] - 1
            if left:
                self._per_ip[connection.peer_ip] = left
            else:
                del self._per_ip[connection.peer_ip]

    def _reap_idle(self) -> None:
        """Close the connections idle for connections.max.idle.ms, then run again."""
        loop = asyncio.get_running_loop()
        idle_s = self._limits.max_idle_ms / 1000
        now = loop.time()
        for connection in list(self.connections):
            if now - connection.last_active >= idle_s and not connection.busy:
                log.info("closing connection from %s: idle for %.0f ms (connections.max.idle.ms)",
                         connection.info.peer, (now - connection.last_active) * 1000)
                connection._close()
        self._reaper = loop.call_later(min(idle_s / 4, 1.0), self._reap_idle)

    async def listen(self, listener: str, host: str, port: int, start_serving: bool = True,
                     transport: ListenerTransport | None = None, buffers: SocketBuffers | None = None) -> int:
        """Bind the listener; the bound port. With `start_serving=False` connections are refused
        until `start_serving()` (a broker that must register its ports before it may serve)."""
        loop = asyncio.get_running_loop()

        def factory() -> KafkaConnection:
            connection = KafkaConnection(self._dispatcher, listener, self._max_request_size,
                                         self._closed, self._admit, transport, buffers)
            self.connections.add(connection)
            return connection

        server = await loop.create_server(factory, host or None, port, reuse_address=True, backlog=512,
                                          start_serving=start_serving)
        if buffers is not None:
            for sock in server.sockets:
                buffers.apply(sock, send=False)
        self._servers.append(server)
        if self._reaper is None and self._limits.max_idle_ms >= 0:
            self._reaper = loop.call_later(min(self._limits.max_idle_ms / 4000, 1.0), self._reap_idle)
        return server.sockets[0].getsockname()[1]

    async def start_serving(self) -> None:
        for server in self._servers:
            await server.start_serving()

    async def close(self, grace_s: float = 0.0) -> None:
        """Stop accepting connections and reading requests, give the requests already read up to
        `grace_s` seconds to be answered (a long-poll fetch answers within its max wait), then
        close every connection."""
        if self._reaper is not None:
            self._reaper.cancel()
        for server in self._servers:
            server.close()
        for connection in list(self.connections):
            connection.stop_reading()
        deadline = asyncio.get_running_loop().time() + grace_s
        while any(connection.busy for connection in self.connections) and \
                asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for connection in list(self.connections):
            connection._close()
        for server in self._servers:
            await server.wait_closed()


# RFC 2253 names of the attribute types Python's `getpeercert()` spells out (others keep its name).
_RDN_KEYWORDS = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
                 "stateOrProvinceName": "ST", "localityName": "L", "streetAddress": "STREET",
                 "domainComponent": "DC", "userId": "UID"}


def _escape_rdn_value(value: str) -> str:
    escaped = "".join(f"\\{char}" if char in ',+"\\<>;=' else char for char in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def rfc2253_subject(certificate: Mapping[str, Any]) -> str:
    """A certificate's subject as Java's `X500Principal.getName()` writes it (RFC 2253: the most
    specific name first, `CN=alice,OU=eng,O=example`), which `ssl.principal.mapping.rules` match."""
    names = []
    for rdn in reversed(certificate.get("subject", ())):
        names.append("+".join(f"{_RDN_KEYWORDS.get(kind, kind)}={_escape_rdn_value(value)}" for kind, value in rdn))
    return ",".join(names)
