"""The client side of a SASL login as Kafka frames it, sans-IO: SaslHandshake v1, then
SaslAuthenticate rounds (PLAIN and OAUTHBEARER in one, SCRAM in two with the server's signature
verified).
Gregor's client and a broker's own connections to other nodes drive it with their own I/O."""

from __future__ import annotations

from typing import Any

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from gregor.protocol.oauthbearer import client_message
from gregor.protocol.scram import ScramClient, ScramError

HANDSHAKE_VERSION = 1
AUTHENTICATE_VERSIONS = (0, 2)


class SaslLoginError(Exception):
    """The login was refused, or the broker does not offer the mechanism; `code` is Kafka's error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class SaslLogin:
    """`first()` is the handshake; `next(response)` gives the next request, None once logged in.
    For OAUTHBEARER `password` is the token."""

    def __init__(self, mechanism: str, username: str, password: str, where: str) -> None:
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._where = where
        self._scram = ScramClient(mechanism, username, password) if mechanism.startswith("SCRAM-") else None
        self._step = 0
        self.session_lifetime_ms = 0  # once logged in: when to log in again (KIP-368; 0: never)

    def first(self) -> SaslHandshakeRequest:
        return SaslHandshakeRequest(mechanism=self.mechanism)

    def next(self, response: Any) -> SaslAuthenticateRequest | None:
        request = self._next(response)
        if request is None:
            self.session_lifetime_ms = getattr(response, "session_lifetime_ms", 0) or 0
        return request

    def _next(self, response: Any) -> SaslAuthenticateRequest | None:
        if response.error_code:
            if self._step == 0:
                offered = ", ".join(response.mechanisms or ()) or "none"
                raise SaslLoginError(response.error_code, f"{self._where} does not offer SASL mechanism "
                                                          f"{self.mechanism} (it offers {offered})")
            raise SaslLoginError(response.error_code, f"{self._where}: {response.error_message or 'SASL failed'}")
        self._step += 1
        try:
            if self.mechanism == "OAUTHBEARER":
                if self._step == 1:
                    return SaslAuthenticateRequest(auth_bytes=client_message(self._password))
                if response.auth_bytes:  # the server's error JSON: acknowledge it, the failure follows
                    return SaslAuthenticateRequest(auth_bytes=b"\x01")
                return None
            if self._scram is None:
                if self._step == 1:
                    token = b"\x00" + self._username.encode() + b"\x00" + self._password.encode()
                    return SaslAuthenticateRequest(auth_bytes=token)
                return None
            if self._step == 1:
                return SaslAuthenticateRequest(auth_bytes=self._scram.first())
            if self._step == 2:
                return SaslAuthenticateRequest(auth_bytes=self._scram.final(bytes(response.auth_bytes)))
            self._scram.verify(bytes(response.auth_bytes))
            return None
        except ScramError as error:
            raise SaslLoginError(ErrorCode.SASL_AUTHENTICATION_FAILED, f"{self._where}: {error}") from None
