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
import logging
import ssl
import struct
from typing import Any, Callable

from gregor.broker.reconnect_backoff import ReconnectBackoff
from gregor.broker.security.listener_security import OutboundSecurity
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import RESPONSES, SaslHandshakeRequest
from gregor.protocol.primitives import Reader
from gregor.protocol.sasl_login import AUTHENTICATE_VERSIONS, HANDSHAKE_VERSION, SaslLogin, SaslLoginError

log = logging.getLogger("gregor.peer")

_SIZE = struct.Struct(">i")
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT_S = 2.0

ResponseCallback = Callable[[int, int, Any], None]


async def read_response_frame(reader: asyncio.StreamReader) -> memoryview:
    """One size-prefixed response frame; DecodeError for a size outside 1..MAX_RESPONSE_BYTES."""
    size = _SIZE.unpack(await reader.readexactly(4))[0]
    if not 0 < size <= MAX_RESPONSE_BYTES:
        raise DecodeError(f"response of {size} bytes")
    return memoryview(await reader.readexactly(size))


def decode_response(frame: memoryview, api_key: int, version: int) -> tuple[int, Any]:
    """(correlation id, response) of a frame answering `api_key` at `version`."""
    header, body = decode_response_header(frame, api_key, version)
    return header.correlation_id, RESPONSES[api_key].decode(Reader(frame, body), version)


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


class _PeerConnection:
    """The connection to one peer and the requests waiting on it: correlation id -> (api key, version)."""

    def __init__(self, node_id: int, host: str, port: int, client_id: str, on_response: ResponseCallback,
                 security: OutboundSecurity = PLAINTEXT) -> None:
        self.node_id = node_id
        self.address = (host, port)
        self._dialer = PeerDialer(host, port, security)
        self._client_id = client_id
        self._on_response = on_response
        self._writer: asyncio.StreamWriter | None = None
        self._opening: asyncio.Task | None = None
        self._pending: dict[int, tuple[int, int]] = {}
        self._reader_task: asyncio.Task | None = None

    def send(self, correlation_id: int, request: Any, version: int) -> None:
        frame = encode_request(correlation_id, self._client_id, request, version)
        if self._writer is not None and not self._writer.is_closing():
            self._pending[correlation_id] = (request.API_KEY, version)
            self._writer.write(frame)
            return
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        self._opening.add_done_callback(lambda _: self._send_opened(correlation_id, request.API_KEY, version, frame))

    def _send_opened(self, correlation_id: int, api_key: int, version: int, frame: bytes) -> None:
        if self._writer is None or self._writer.is_closing():
            return
        self._pending[correlation_id] = (api_key, version)
        self._writer.write(frame)

    async def _open(self) -> None:
        try:
            reader, writer = await self._dialer.open(self._client_id, CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            self._opening = None
            return
        self._writer = writer
        self._opening = None
        self._reader_task = asyncio.ensure_future(self._read(reader, writer))

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                frame = await read_response_frame(reader)
                correlation_id = _SIZE.unpack_from(frame, 0)[0]
                expected = self._pending.pop(correlation_id, None)
                if expected is None:
                    raise DecodeError(f"response to unknown correlation id {correlation_id}")
                _, response = decode_response(frame, *expected)
                self._on_response(self.node_id, correlation_id, response)
        except (OSError, asyncio.IncompleteReadError, DecodeError) as error:
            log.debug("connection to node %d lost: %s", self.node_id, error)
        finally:
            self._pending.clear()
            writer.close()
            if self._writer is writer:
                self._writer = None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        for task in (self._opening, self._reader_task):
            if task is not None:
                task.cancel()


class PeerChannel:
    """Requests to peers by node id; responses go to `on_response(node_id, correlation_id, response)`."""

    def __init__(self, addresses: dict[int, tuple[str, int]], client_id: str, on_response: ResponseCallback,
                 security: OutboundSecurity = PLAINTEXT) -> None:
        self._connections = {node_id: _PeerConnection(node_id, host, port, client_id, on_response, security)
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
