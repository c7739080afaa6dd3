"""Requests from this node to the other nodes of the cluster (Kafka's NodeToNodeChannel).

One connection per peer, opened on first use and again after it fails; requests are pipelined
and answered by correlation id. Delivery is best effort: a request whose connection cannot be
opened or breaks is dropped, and its sender (raft, which keeps its own request timeouts and
retries) never hears back. That keeps the failure handling in the sans-IO layer, where the
simulator exercises it, instead of duplicating it here.

A connection to a secured listener (`OutboundSecurity`) is opened with TLS and logs in with SASL
(`gregor.protocol.sasl_login`) before its first request, as Kafka's brokers do between themselves.
A peer that refuses or cannot be reached is tried again only after its reconnect backoff
(`reconnect_backoff.py`), and the failure is logged once, not once per attempt.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import struct
from typing import Any, Callable, cast

from gregor.broker.reconnect_backoff import ReconnectBackoff
from gregor.broker.security.listener_security import OutboundSecurity
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.headers import encode_request, read_response_header
from gregor.protocol.messages import RESPONSES, SaslHandshakeRequest
from gregor.protocol.primitives import Reader
from gregor.protocol.sasl_login import AUTHENTICATE_VERSIONS, HANDSHAKE_VERSION, SaslLogin, SaslLoginError

log = logging.getLogger("gregor.peer")

_SIZE = struct.Struct(">i")
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT_S = 2.0

ResponseCallback = Callable[[int, int, Any], None]
LinkResponseCallback = Callable[[int, Any], None]


async def read_response_frame(reader: asyncio.StreamReader) -> memoryview:
    """One size-prefixed response frame; DecodeError for a size outside 1..MAX_RESPONSE_BYTES."""
    size = _SIZE.unpack(await reader.readexactly(4))[0]
    if not 0 < size <= MAX_RESPONSE_BYTES:
        raise DecodeError(f"response of {size} bytes")
    return memoryview(await reader.readexactly(size))


def decode_response(frame: memoryview, api_key: int, version: int) -> tuple[int, Any]:
    """(correlation id, response) of a frame answering `api_key` at `version`."""
    reader = Reader(frame)
    header = read_response_header(reader, api_key, version)
    return header.correlation_id, RESPONSES[api_key].decode(reader, version)


PLAINTEXT = OutboundSecurity()


class LoginRefused(ConnectionRefusedError):
    """The peer refused this node's SASL login: a configuration to fix, not a peer that is down."""


async def open_peer(host: str, port: int, security: OutboundSecurity,
                    client_id: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to another node's listener, secured and logged in as `security` says; an
    OSError (the stream closed) for a refused login, which the caller treats as an unreachable peer."""
    if security.ssl_context is None:
        reader, writer = await asyncio.open_connection(host, port)
    else:
        reader, writer = await asyncio.open_connection(host, port, ssl=security.ssl_context, server_hostname=host)
    if security.mechanism is None:
        return reader, writer
    login = SaslLogin(security.mechanism, security.username, security.password, f"{host}:{port}")
    request: Any = login.first()
    correlation_id = 0
    try:
        while request is not None:
            correlation_id -= 1  # negative: never one of the requests that follow
            version = HANDSHAKE_VERSION if isinstance(request, SaslHandshakeRequest) else AUTHENTICATE_VERSIONS[1]
            writer.write(encode_request(correlation_id, client_id, request, version))
            await writer.drain()
            _, response = decode_response(await read_response_frame(reader), request.API_KEY, version)
            request = login.next(response)
    except SaslLoginError as error:
        writer.close()
        raise LoginRefused(f"SASL login refused: {error}") from None
    except (asyncio.IncompleteReadError, DecodeError) as error:
        writer.close()
        raise ConnectionResetError(f"{host}:{port} closed the connection during the SASL login: {error}") from None
    except BaseException:
        writer.close()
        raise
    return reader, writer


class PeerDialer:
    """Opens connections to one peer, no sooner than its reconnect backoff allows. While it backs
    off, `open` fails at once (ConnectionRefusedError) without touching the network."""

    def __init__(self, host: str, port: int, security: OutboundSecurity,
                 backoff: ReconnectBackoff | None = None) -> None:
        self.address = (host, port)
        self._security = security
        self.backoff = backoff or ReconnectBackoff()

    async def open(self, client_id: str,
                   timeout_s: float | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        loop = asyncio.get_running_loop()
        host, port = self.address
        wait_s = self.backoff.wait_s(loop.time())
        if wait_s > 0:
            raise ConnectionRefusedError(f"{host}:{port}: next attempt in {wait_s * 1000:.0f} ms, after "
                                         f"{self.backoff.failures} failed: {self.backoff.reported}")
        try:
            streams = await asyncio.wait_for(open_peer(host, port, self._security, client_id), timeout_s)
        except (OSError, asyncio.TimeoutError) as error:
            reason = str(error) or f"no connection within {timeout_s} s"
            if self.backoff.failed(loop.time(), reason):
                level = logging.WARNING if isinstance(error, (LoginRefused, ssl.SSLError)) else logging.INFO
                log.log(level, "cannot connect to %s:%d as %s: %s (retrying with backoff, logged again only "
                        "when this changes)", host, port, client_id, reason)
            raise
        except asyncio.CancelledError:
            self.backoff.failed(loop.time(), "no connection before the request timed out")
            raise
        if self.backoff.reported is not None:
            log.info("connected to %s:%d as %s after %d failed attempts", host, port, client_id, self.backoff.failures)
        self.backoff.succeeded()
        return streams


class RequestConnection:
    """One connection to a peer carrying one request at a time, each awaited by its caller (the
    broker's requests to the controller, a follower's fetches from a leader). It is opened on
    first use and again after any failure, which is raised to the caller."""

    def __init__(self, host: str, port: int, security: OutboundSecurity = PLAINTEXT) -> None:
        self.address = (host, port)
        self._dialer = PeerDialer(host, port, security)
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()

    async def call(self, correlation_id: int, client_id: str, request: Any, version: int) -> Any:
        async with self._lock:
            try:
                if self._streams is None:
                    self._streams = await self._dialer.open(client_id)
                reader, writer = self._streams
                writer.write(encode_request(correlation_id, client_id, request, version))
                await writer.drain()
                answered, response = decode_response(await read_response_frame(reader), request.API_KEY, version)
                if answered != correlation_id:
                    raise DecodeError(f"response to correlation id {answered}, not {correlation_id}")
                return response
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None

    async def wait_closed(self) -> None:
        if self._streams is not None:
            writer = self._streams[1]
            self.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass


FailureCallback = Callable[[list[int]], None]


class PeerLink(asyncio.Protocol):
    """A pipelined connection to one peer whose answers are decoded in the event loop's read
    callback and handed on at once: a follower's next fetch leaves in the same callback that read
    the leader's answer (through a stream reader and a task per request, each replication round
    cost a follower four loop iterations and two tasks before its next request left).

    Requests are written as they come, queued while the connection opens (again after any
    failure). `on_response(correlation_id, response)` gets each answer; `on_failure(ids)` the
    requests that will never be answered (the connection could not open or broke; a request over
    its timeout closes the connection, as Kafka's NetworkClient does).
    """

    def __init__(self, address: tuple[str, int], client_id: str, on_response: LinkResponseCallback,
                 on_failure: FailureCallback | None = None, security: OutboundSecurity = PLAINTEXT) -> None:
        self.address = address
        self._dialer = PeerDialer(*address, security)
        self._client_id = client_id
        self._on_response = on_response
        self._on_failure = on_failure
        self._transport: asyncio.Transport | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._opening: asyncio.Task | None = None
        self._queued: list[bytes] = []
        self._pending: dict[int, tuple[int, int, asyncio.TimerHandle | None]] = {}
        self._buffer = bytearray()
        self._closed = False

    def send(self, correlation_id: int, request: Any, version: int, timeout_s: float | None = None) -> None:
        """Send `request`; its answer or failure comes back through the callbacks, never from here."""
        frame = encode_request(correlation_id, self._client_id, request, version)
        loop = asyncio.get_running_loop()
        timer = loop.call_later(timeout_s, self._timed_out, correlation_id) if timeout_s is not None else None
        self._pending[correlation_id] = (request.API_KEY, version, timer)
        if self._transport is not None:
            self._transport.write(frame)
            return
        self._queued.append(frame)
        if self._opening is None and not self._closed:
            self._opening = asyncio.ensure_future(self._open())

    async def _open(self) -> None:
        try:
            reader, writer = await self._dialer.open(self._client_id, CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            self._opening = None
            self._queued.clear()
            self._fail_pending()
            return
        self._opening = None
        if self._closed:
            writer.close()
            return
        transport = cast(asyncio.Transport, writer.transport)  # uvloop's are not asyncio.Transport subclasses
        transport.set_protocol(self)  # the login is over and nothing was asked yet: no bytes are buffered
        self._transport = transport
        self._writer = writer  # kept: a stream writer that is collected closes its transport (Python 3.12+)
        queued, self._queued = self._queued, []
        transport.writelines(queued)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        start = 0
        try:
            while len(buffer) - start >= 4:
                size = _SIZE.unpack_from(buffer, start)[0]
                if not 0 < size <= MAX_RESPONSE_BYTES:
                    raise DecodeError(f"response of {size} bytes")
                if len(buffer) - start - 4 < size:
                    break
                frame = memoryview(buffer[start + 4:start + 4 + size])  # a copy: the answer may keep views of it
                start += 4 + size
                correlation_id = _SIZE.unpack_from(frame, 0)[0]
                expected = self._pending.pop(correlation_id, None)
                if expected is None:
                    raise DecodeError(f"response to unknown correlation id {correlation_id}")
                api_key, version, timer = expected
                if timer is not None:
                    timer.cancel()
                _, response = decode_response(frame, api_key, version)
                self._on_response(correlation_id, response)
                if self._transport is None:  # the callback closed the link
                    break
        except DecodeError as error:
            log.warning("closing the connection to %s:%d: %s", *self.address, error)
            self._drop()
        finally:
            del buffer[:start]  # answers handed on are never handed on again, whatever a callback raised

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            log.debug("connection to %s:%d lost: %s", *self.address, exc)
            self._drop()

    def _timed_out(self, correlation_id: int) -> None:
        if correlation_id in self._pending:
            log.debug("request %d to %s:%d timed out: closing the connection", correlation_id, *self.address)
            self._pending[correlation_id] = (*self._pending[correlation_id][:2], None)
            self._drop()

    def _drop(self) -> None:
        """Close the connection and fail what it carried; the next request opens a new one."""
        transport, self._transport, self._writer = self._transport, None, None
        self._buffer.clear()
        self._queued.clear()
        if transport is not None:
            transport.close()
        self._fail_pending()

    def _fail_pending(self) -> None:
        failed = list(self._pending)
        for _, _, timer in self._pending.values():
            if timer is not None:
                timer.cancel()
        self._pending.clear()
        if failed and self._on_failure is not None:
            self._on_failure(failed)

    def close(self) -> None:
        """Close for good; the requests still waiting are reported failed."""
        self._closed = True
        if self._opening is not None:
            self._opening.cancel()
            self._opening = None
        self._queued.clear()
        self._drop()


class PeerChannel:
    """Requests to peers by node id; responses go to `on_response(node_id, correlation_id, response)`."""

    def __init__(self, addresses: dict[int, tuple[str, int]], client_id: str, on_response: ResponseCallback,
                 security: OutboundSecurity = PLAINTEXT) -> None:
        self._connections = {node_id: PeerLink((host, port), client_id, functools.partial(on_response, node_id),
                                               security=security)
                             for node_id, (host, port) in addresses.items()}

    def send(self, destination: int, correlation_id: int, request: Any, version: int) -> None:
        """Queue `request` for node `destination`; unknown nodes and broken links drop it."""
        connection = self._connections.get(destination)
        if connection is None:
            log.warning("no address for node %d: %s dropped", destination, type(request).__name__)
            return
        connection.send(correlation_id, request, version)

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
