"""The SASL gate of one connection on a SASL_PLAINTEXT or SASL_SSL listener.

Until the connection is authenticated it answers only ApiVersions (through the broker's
dispatcher), SaslHandshake and SaslAuthenticate, as Kafka's SaslServerAuthenticator does; any
other request closes the connection. After a SaslHandshake v0 (older clients) the tokens travel
as bare size-prefixed frames instead of SaslAuthenticate requests, and a failed one just closes
the connection, as in Kafka. A handshake naming a mechanism the listener has not enabled
is answered UNSUPPORTED_SASL_MECHANISM with the enabled list, a failed exchange
SASL_AUTHENTICATION_FAILED; both close the connection after
`connection.failed.authentication.delay.ms`, and are logged once with the peer's address. Once
authenticated, the connection's principal is set and every request goes to the dispatcher.

Re-authentication (KIP-368): with `connections.max.reauth.ms` above 0, SaslAuthenticate answers
the session's lifetime (that, or less for an OAUTHBEARER token that expires sooner); the client
logs in again on the same connection (SaslHandshake v1 with the same mechanism, then
SaslAuthenticate) before it ends, as the same principal. A request after the session has ended
closes the connection, as in Kafka.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from gregor.broker.network import CloseConnection, ConnectionInfo, Dispatcher
from gregor.broker.security.sasl_mechanisms import (
    OAUTHBEARER, PLAIN, SCRAM_MECHANISMS, OAuthBearerExchange, PlainExchange, SaslExchange, SaslFailure,
    ScramExchange,
)
from gregor.protocol.oauthbearer import TokenValidator, UnsecuredValidator
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import DecodeError
from gregor.protocol.headers import encode_response, parse_request_header
from gregor.protocol.messages import (
    ApiVersionsRequest, Message, RequestHeader, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from gregor.protocol.primitives import Reader
from gregor.protocol.scram import ScramCredential

log = logging.getLogger("gregor.security")

HANDSHAKE_VERSIONS = (0, 1)  # v0: the tokens follow as bare frames (librdkafka < 2.1 asks for v0 to exist)
AUTHENTICATE_VERSIONS = (0, 2)


@dataclass(frozen=True)
class SaslSettings:
    """A listener's SASL configuration: its enabled mechanisms in order, PLAIN's users, where SCRAM
    credentials come from (user, mechanism), how OAUTHBEARER tokens are checked and against which
    clock (epoch milliseconds), and how long a failed connection is held."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str]
    scram_credential: Callable[[str, str], ScramCredential | None]
    failure_delay_s: float = 0.1
    oauthbearer: TokenValidator = UnsecuredValidator()
    now_ms: Callable[[], int] = lambda: 0
    max_reauth_ms: int = 0

    def exchange(self, mechanism: str) -> SaslExchange:
        if mechanism == PLAIN:
            return PlainExchange(self.plain_users)
        if mechanism in SCRAM_MECHANISMS:
            return ScramExchange(mechanism, lambda user: self.scram_credential(user, mechanism))
        if mechanism == OAUTHBEARER:
            return OAuthBearerExchange(self.oauthbearer, self.now_ms)
        raise ValueError(mechanism)


class SaslAuthenticator:
    """Wraps the broker's dispatcher for one connection (a `Dispatcher` itself)."""

    def __init__(self, dispatcher: Dispatcher, settings: SaslSettings) -> None:
        self._dispatcher = dispatcher
        self._settings = settings
        self._exchange: SaslExchange | None = None
        self._mechanism = ""
        self._bare_tokens = False
        self.authenticated = False
        self._session_end_ms: int | None = None  # with re-authentication: when the session ends
        self._reauthenticating = False

    def step_done(self) -> None:
        self._dispatcher.step_done()

    def dispatch(self, frame: bytearray, info: ConnectionInfo) -> object:
        if self.authenticated and not self._reauthenticating:
            if self._session_end_ms is None:
                return self._dispatcher.dispatch(frame, info)
            if int.from_bytes(frame[:2], "big") == SaslHandshakeRequest.API_KEY:
                self._reauthenticating = True  # KIP-368: the same exchange again, on this connection
                self._exchange = None
            elif self._settings.now_ms() >= self._session_end_ms:
                raise CloseConnection(f"the SASL session of {info.principal} on listener {info.listener} has "
                                      f"expired without re-authentication (connections.max.reauth.ms)")
            else:
                return self._dispatcher.dispatch(frame, info)
        if self._bare_tokens:
            return self._bare_token(bytes(frame), info)
        view = memoryview(frame)
        try:
            header, body = parse_request_header(view)
        except DecodeError as error:
            raise CloseConnection(f"unreadable request header during SASL authentication: {error}") from None
        api_key, version = header.request_api_key, header.request_api_version
        if api_key == ApiVersionsRequest.API_KEY and self._exchange is None and not self._reauthenticating:
            return self._dispatcher.dispatch(frame, info)
        if api_key == SaslHandshakeRequest.API_KEY and self._exchange is None:
            return self._handshake(header, view, body, info)
        if api_key == SaslAuthenticateRequest.API_KEY and self._exchange is not None:
            return self._authenticate(header, view, body, info)
        raise CloseConnection(f"unexpected request (API key {api_key}) before SASL authentication on listener "
                              f"{info.listener}{' (re-authentication)' if self._reauthenticating else ''}")

    def _decode(self, request_class: type[Message], header: RequestHeader, view: memoryview, body: int,
                versions: tuple[int, int]) -> Any:
        version = header.request_api_version
        if not versions[0] <= version <= versions[1]:
            raise CloseConnection(f"{request_class.__name__} v{version} is not supported")
        try:
            return request_class.decode(Reader(view, body), version)
        except DecodeError:
            raise CloseConnection(f"malformed {request_class.__name__}") from None

    def _handshake(self, header: RequestHeader, view: memoryview, body: int, info: ConnectionInfo) -> object:
        request = self._decode(SaslHandshakeRequest, header, view, body, HANDSHAKE_VERSIONS)
        mechanism = request.mechanism
        enabled = list(self._settings.mechanisms)
        if self._reauthenticating and (mechanism != self._mechanism or header.request_api_version == 0):
            raise CloseConnection(f"re-authentication of {info.principal} must use SaslHandshake v1 and the same "
                                  f"mechanism ({self._mechanism}), not {mechanism} v{header.request_api_version}")
        if mechanism not in enabled:
            answer = SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
            raise CloseConnection(f"failed authentication on listener {info.listener}: SASL mechanism {mechanism} "
                                  f"is not enabled (enabled: {', '.join(enabled)})", self._encode(header, answer),
                                  self._settings.failure_delay_s)
        self._mechanism = mechanism
        self._exchange = self._settings.exchange(mechanism)
        self._bare_tokens = header.request_api_version == 0
        return self._encode(header, SaslHandshakeResponse(error_code=0, mechanisms=enabled))

    def _failed(self, failure: SaslFailure, info: ConnectionInfo, answer: list[bytes] | None) -> CloseConnection:
        """The close of a failed exchange, logged once by the edge with the peer's address."""
        user = getattr(self._exchange, "user", "")
        return CloseConnection(f"failed authentication on listener {info.listener} ({self._mechanism}"
                               f"{', user ' + user if user else ''}): {failure}", answer,
                               self._settings.failure_delay_s)

    def _respond(self, token: bytes, info: ConnectionInfo) -> bytes:
        """The exchange's answer to `token`; SaslFailure when it does not authenticate."""
        exchange = self._exchange
        assert exchange is not None
        answer = exchange.respond(token)
        if exchange.principal is not None:
            if self._reauthenticating and exchange.principal != info.principal:
                raise SaslFailure(f"Cannot change principals during re-authentication from {info.principal} to "
                                  f"{exchange.principal}")
            self.authenticated = True
            self._reauthenticating = False
            info.principal = exchange.principal
            self._start_session(exchange)
            log.debug("connection from %s authenticated as %s (%s)", info.peer, info.principal, self._mechanism)
        return answer

    def _start_session(self, exchange: SaslExchange) -> None:
        """The session's end under re-authentication: `connections.max.reauth.ms` from now, or the
        credential's own expiry (an OAUTHBEARER token's) when sooner; none without re-authentication."""
        if self._settings.max_reauth_ms <= 0:
            return
        now = self._settings.now_ms()
        end = now + self._settings.max_reauth_ms
        expires = getattr(exchange, "expires_ms", None)
        self._session_end_ms = min(end, expires) if expires is not None else end

    def session_lifetime_ms(self) -> int:
        """What SaslAuthenticate tells the client (0: no re-authentication)."""
        if self._session_end_ms is None:
            return 0
        return max(0, self._session_end_ms - self._settings.now_ms())

    def _bare_token(self, token: bytes, info: ConnectionInfo) -> object:
        try:
            answer = self._respond(token, info)
        except SaslFailure as failure:
            raise self._failed(failure, info, None) from None
        return [struct.pack(">i", len(answer)) + answer]

    def _authenticate(self, header: RequestHeader, view: memoryview, body: int, info: ConnectionInfo) -> object:
        request = self._decode(SaslAuthenticateRequest, header, view, body, AUTHENTICATE_VERSIONS)
        try:
            token = self._respond(bytes(request.auth_bytes), info)
        except SaslFailure as failure:
            answer = SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                                              error_message=str(failure), auth_bytes=b"")
            raise self._failed(failure, info, self._encode(header, answer)) from None
        return self._encode(header, SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=token,
                                                             session_lifetime_ms=self.session_lifetime_ms()))

    @staticmethod
    def _encode(header: RequestHeader, response: Message) -> list[bytes]:
        return encode_response(header.correlation_id, response, header.request_api_key, header.request_api_version)
