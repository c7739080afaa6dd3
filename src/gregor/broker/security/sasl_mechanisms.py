"""The server side of the SASL mechanisms Gregor serves, as sans-IO exchanges of tokens.

PLAIN checks a user's password against the listener's JAAS `user_<name>` entries (Kafka's
default callback); SCRAM-SHA-256/512 against the credentials in the metadata log; OAUTHBEARER
accepts unsecured JWTs (Kafka's development-only default validator, its JAAS options) or tokens
signed by a key of the configured JWKS (`jwks_validator.py`). Each exchange
answers one token at a time until `principal` is set; `SaslFailure` ends it (the broker answers
SASL_AUTHENTICATION_FAILED and closes the connection).
"""

from __future__ import annotations

import hmac
from typing import Callable, Mapping, Protocol

from gregor.protocol.oauthbearer import TokenError, TokenValidator, parse_client_message
from gregor.protocol.scram import ScramCredential, ScramError, ScramServer

PLAIN = "PLAIN"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
OAUTHBEARER = "OAUTHBEARER"
SUPPORTED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS, OAUTHBEARER)


class SaslFailure(Exception):
    """Authentication failed; the message is what the client is told (it names no secret)."""


class SaslExchange(Protocol):
    principal: str | None  # "User:<name>" once authenticated

    def respond(self, token: bytes) -> bytes:
        """The server's next token for the client's `token`; SaslFailure when it does not authenticate."""


class PlainExchange:
    """PLAIN (RFC 4616): `[authzid] NUL user NUL password` in one token, an empty answer."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.principal: str | None = None
        self.user = ""

    def respond(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslFailure("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (part.decode("utf-8", "replace") for part in parts)
        if not user or not password:
            raise SaslFailure("Authentication failed: username or password not specified")
        self.user = user
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        self.principal = f"User:{user}"
        return b""


class ScramExchange:
    """SCRAM-SHA-256/512: client-first → server-first, client-final → server-final."""

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None]) -> None:
        self._server = ScramServer(mechanism, lookup)
        self._step = 0
        self.principal: str | None = None

    @property
    def user(self) -> str:
        return self._server.user

    def respond(self, token: bytes) -> bytes:
        try:
            if self._step == 0:
                self._step = 1
                return self._server.first(token)
            if self._step == 1:
                answer = self._server.final(token)
                self._step = 2
                self.principal = f"User:{self._server.user}"
                return answer
        except ScramError as error:
            raise SaslFailure(str(error)) from None
        raise SaslFailure("SCRAM exchange already complete")


class OAuthBearerExchange:
    """OAUTHBEARER (RFC 7628): one client message holding the token; a token that does not
    validate is answered with RFC 7628's error JSON, and the client's acknowledgement (a bare
    separator) ends the exchange in failure, as Kafka's OAuthBearerSaslServer does."""

    def __init__(self, validator: TokenValidator, now_ms: Callable[[], int]) -> None:
        self._validator = validator
        self._now_ms = now_ms
        self._failure: str | None = None
        self.principal: str | None = None
        self.user = ""
        self.expires_ms: int | None = None  # the token's expiry: a re-authenticated session ends by then

    def respond(self, token: bytes) -> bytes:
        if self._failure is not None:
            raise SaslFailure(f"Authentication failed: {self._failure}")
        try:
            authzid, jwt = parse_client_message(token)
            name, expires_ms = self._validator.validate(jwt, self._now_ms())
        except TokenError as error:
            self._failure = str(error)
            return b'{"status":"invalid_token"}'
        if authzid and authzid != name:
            raise SaslFailure("Authentication failed: the authorization id differs from the token's principal")
        self.user = name
        self.principal = f"User:{name}"
        self.expires_ms = expires_ms
        return b""
