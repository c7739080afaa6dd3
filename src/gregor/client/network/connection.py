"""One TCP connection to one broker: asyncio transport around a sans-IO `WireSession`.

`BrokerConnection.open` connects within the setup timeout and negotiates ApiVersions, so a
connection in hand is always ready to pick versions and pipeline requests. Once it fails it
stays closed: every request in flight fails at once (with `_TRANSPORT`, or `_TIMED_OUT` for the
request whose timeout fired, or `_BAD_MSG` for an undecodable response) and the owner opens a
new one. As in Kafka's Java client, a request that times out closes its connection, because the
responses behind it can no longer be told apart from a broker that stopped answering.

Everything here runs on the event loop of the client's network thread.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, cast

from gregor import __version__
from gregor.client.errors import ClientErrorCode, KafkaConnectionError, KafkaException, KafkaTimeoutError
from gregor.client.network.security import ClientSecurity, authenticate
from gregor.client.network.versions import BrokerApiVersions, client_versions
from gregor.client.network.wire import WireSession
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.sasl_login import AUTHENTICATE_VERSIONS, HANDSHAKE_VERSION, SaslLoginError
from gregor.protocol.messages import ApiKey, ApiVersionsRequest

SOFTWARE_NAME = "gregor-python"
_PLAINTEXT = ClientSecurity()


class BrokerConnection(asyncio.Protocol):
    """A negotiated connection; `send` pipelines requests and returns their responses."""

    def __init__(self, node_id: int, host: str, port: int, *, client_id: str | None,
                 request_timeout_ms: int,
                 on_close: Callable[[BrokerConnection, KafkaException], None] | None = None) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.request_timeout_ms = request_timeout_ms
        self.api_versions = BrokerApiVersions({})
        self._wire = WireSession(client_id)
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._waiters: dict[int, tuple[asyncio.Future, asyncio.TimerHandle]] = {}
        self._writable: asyncio.Future | None = None
        self._on_close = on_close
        self.close_reason: KafkaException | None = None
        self._security = _PLAINTEXT
        self._reauthenticating: asyncio.Future | None = None  # other requests wait for a re-login (KIP-368)
        self._reauth_timer: asyncio.TimerHandle | None = None

    @classmethod
    async def open(cls, node_id: int, host: str, port: int, *, client_id: str | None,
                   request_timeout_ms: int, setup_timeout_ms: float,
                   on_close: Callable[[BrokerConnection, KafkaException], None] | None = None,
                   security: ClientSecurity = _PLAINTEXT) -> BrokerConnection:
        """Connect (TLS when `security` says so), negotiate ApiVersions and log in (SASL);
        raises KafkaConnectionError/KafkaTimeoutError, or KafkaException
        SASL_AUTHENTICATION_FAILED / UNSUPPORTED_SASL_MECHANISM when the login is refused."""
        connection = cls(node_id, host, port, client_id=client_id,
                         request_timeout_ms=request_timeout_ms, on_close=on_close)
        loop = asyncio.get_running_loop()
        tls = {} if security.ssl_context is None else {"ssl": security.ssl_context, "server_hostname": host}
        try:
            async with asyncio.timeout(setup_timeout_ms / 1000):
                await loop.create_connection(lambda: connection, host, port, **tls)
        except (OSError, TimeoutError) as error:
            reason = "timed out" if isinstance(error, TimeoutError) else str(error)
            raise KafkaConnectionError(ClientErrorCode._TRANSPORT,
                                       f"connect to {host}:{port} (node {node_id}) failed: {reason}") from None
        try:
            await connection._negotiate_api_versions()
            await connection._authenticate(security)
        except BaseException as error:
            connection.close(error if isinstance(error, KafkaException) else None)
            raise
        return connection

    @property
    def closed(self) -> bool:
        return self.close_reason is not None

    @property
    def in_flight(self) -> int:
        return self._wire.in_flight

    def __repr__(self) -> str:
        return f"BrokerConnection(node {self.node_id} at {self.host}:{self.port})"

    def pick_version(self, api_key: int, versions: tuple[int, int] | None = None) -> int:
        """The highest version of `api_key` both this broker and the client (or `versions`) speak."""
        return self.api_versions.pick(api_key, versions)

    async def send(self, request: Any, *, version: int | None = None, versions: tuple[int, int] | None = None,
                   timeout_ms: float | None = None, expect_response: bool = True) -> Any:
        """Write `request` and return its decoded response (None when none is expected).

        The version is `version`, or the highest both sides support within `versions` (the
        client's declared range by default). Errors in the response body are returned, not
        raised; failures of the connection raise KafkaException.
        """
        if version is None:
            version = self.pick_version(request.API_KEY, versions)
        while self._reauthenticating is not None and not self.closed and not _is_sasl(request):
            await asyncio.shield(self._reauthenticating)
        while self._writable is not None and not self.closed:
            await asyncio.shield(self._writable)
        if self.close_reason is not None:
            raise _fresh(self.close_reason)
        correlation_id, frame = self._wire.encode_request(request, version, expect_response)
        for part in frame:
            self._transport.write(part)
        if not expect_response:
            return None
        waiter = self._loop.create_future()
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        timer = self._loop.call_later(timeout_ms / 1000, self._on_request_timeout, correlation_id,
                                      request.API_KEY, timeout_ms)
        self._waiters[correlation_id] = (waiter, timer)
        return await waiter

    def close(self, reason: KafkaException | None = None) -> None:
        """Close for good; every request in flight fails with `reason` (default `_TRANSPORT`)."""
        if self.close_reason is not None:
            return
        self.close_reason = reason or self._transport_error("closed")
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
        if self._reauthenticating is not None and not self._reauthenticating.done():
            self._reauthenticating.set_result(None)
        if self._transport is not None:
            self._transport.abort()
        for pending in self._wire.take_in_flight():
            self._fail(pending.correlation_id, self.close_reason)
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        if self._on_close is not None:
            self._on_close(self, self.close_reason)

    # asyncio.Protocol callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        for reply in self._wire.receive_data(data):
            if reply.error is not None:
                self._fail(reply.request.correlation_id, reply.error)
            else:
                self._resolve(reply.request.correlation_id, reply.response)
        if self._wire.violation is not None:
            self.close(self._transport_error(f"closed after a broken response ({self._wire.violation})"))

    def eof_received(self) -> bool:
        self.close(KafkaConnectionError(
            ClientErrorCode._TRANSPORT, f"node {self.node_id} ({self.host}:{self.port}) closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.close(self._transport_error(f"lost: {exc}" if exc else "lost"))

    def pause_writing(self) -> None:
        self._writable = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    # internals

    async def _negotiate_api_versions(self) -> None:
        version = client_versions(ApiKey.API_VERSIONS)[1]
        request = ApiVersionsRequest(client_software_name=SOFTWARE_NAME, client_software_version=__version__)
        for _ in range(3):
            response = await self.send(request, version=version)
            if response.error_code == ErrorCode.UNSUPPORTED_VERSION and version > 0:
                offered = BrokerApiVersions.from_entries(response.api_keys).max_version(ApiKey.API_VERSIONS)
                version = offered if offered is not None and offered < version else 0
                continue
            if response.error_code != ErrorCode.NONE:
                raise KafkaException(response.error_code,
                                     f"ApiVersions v{version} refused by node {self.node_id}")
            self.api_versions = BrokerApiVersions.from_entries(response.api_keys)
            return
        raise KafkaException(ErrorCode.UNSUPPORTED_VERSION, f"node {self.node_id} accepts no ApiVersions version")

    async def _authenticate(self, security: ClientSecurity) -> None:
        """Log in; when the broker limits the session (KIP-368), log in again on this connection at
        90 % of its lifetime, holding other requests back meanwhile, as Kafka's clients do."""
        self._security = security

        async def send(request: Any) -> Any:
            versions = ((HANDSHAKE_VERSION, HANDSHAKE_VERSION) if request.API_KEY == ApiKey.SASL_HANDSHAKE
                        else AUTHENTICATE_VERSIONS)
            return await self.send(request, versions=versions)

        try:
            lifetime_ms = await authenticate(security, send, f"node {self.node_id} ({self.host}:{self.port})")
        except SaslLoginError as error:
            raise KafkaException(error.code, str(error)) from None
        if lifetime_ms > 0 and not self.closed:
            self._reauth_timer = self._loop.call_later(lifetime_ms * 0.9 / 1000, self._reauthenticate)

    def _reauthenticate(self) -> None:
        self._reauth_timer = None
        if self.closed:
            return
        self._reauthenticating = self._loop.create_future()
        task = asyncio.ensure_future(self._authenticate(self._security))
        task.add_done_callback(self._reauthenticated)

    def _reauthenticated(self, task: asyncio.Task) -> None:
        waiting, self._reauthenticating = self._reauthenticating, None
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self.close(error if isinstance(error, KafkaException) else self._transport_error(
                f"closed after re-authentication failed: {error}"))
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    def _on_request_timeout(self, correlation_id: int, api_key: int, timeout_ms: float) -> None:
        self._fail(correlation_id, KafkaTimeoutError(
            ClientErrorCode._TIMED_OUT,
            f"{ApiKey(api_key).name} request to node {self.node_id} timed out after {timeout_ms:.0f} ms"))
        self.close(self._transport_error("closed after a request timed out"))

    def _transport_error(self, what: str) -> KafkaConnectionError:
        return KafkaConnectionError(ClientErrorCode._TRANSPORT,
                                    f"connection to node {self.node_id} ({self.host}:{self.port}) {what}")

    def _resolve(self, correlation_id: int, response: Any) -> None:
        entry = self._waiters.pop(correlation_id, None)
        if entry is not None:
            entry[1].cancel()
            if not entry[0].done():
                entry[0].set_result(response)

    def _fail(self, correlation_id: int, error: KafkaException) -> None:
        entry = self._waiters.pop(correlation_id, None)
        if entry is not None:
            entry[1].cancel()
            if not entry[0].done():
                entry[0].set_exception(_fresh(error))


def _is_sasl(request: Any) -> bool:
    return request.API_KEY in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)


def _fresh(error: KafkaException) -> KafkaException:
    """A new exception for the same error, so that each waiter gets its own traceback."""
    return type(error)(error.error)
