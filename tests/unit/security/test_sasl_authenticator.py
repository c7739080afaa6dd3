"""The SASL gate of one connection, driven with encoded frames as the network edge drives it:
what it answers before authentication, what closes the connection, and the principal it sets."""

from __future__ import annotations

import pytest

from gregor.broker.network import CloseConnection, ConnectionInfo
from gregor.broker.security.sasl_authenticator import SaslAuthenticator, SaslSettings
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import (
    ApiVersionsRequest, MetadataRequest, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from gregor.protocol.primitives import Reader
from gregor.protocol.scram import ScramClient, new_credential

CREDENTIAL = new_credential("SCRAM-SHA-256", "bob-secret")


class _Broker:
    """Stands for the broker's dispatcher: records what reaches it."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def step_done(self) -> None:
        pass  # nothing is left for the end of a step

    def dispatch(self, frame: bytearray, info: ConnectionInfo) -> object:
        self.seen.append(int.from_bytes(frame[:2], "big"))
        return b"answered"


class _Clock:
    def __init__(self) -> None:
        self.now_ms = 1_800_000_000_000

    def __call__(self) -> int:
        return self.now_ms


def _gate(failure_delay_s: float = 0.1, max_reauth_ms: int = 0,
          clock: _Clock | None = None) -> tuple[SaslAuthenticator, _Broker, ConnectionInfo]:
    broker = _Broker()
    settings = SaslSettings(("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"), {"alice": "alice-secret", "eve": "eve-secret"},
                            lambda user, mechanism: CREDENTIAL if (user, mechanism) == ("bob", "SCRAM-SHA-256")
                            else None, failure_delay_s, now_ms=clock or _Clock(), max_reauth_ms=max_reauth_ms)
    return SaslAuthenticator(broker, settings), broker, ConnectionInfo("127.0.0.1:5000", "SASL_SSL", 1)


def _frame(request, version: int) -> bytearray:
    return bytearray(encode_request(7, "test", request, version)[4:])


def _decode(parts, response_class, version: int):
    frame = memoryview(b"".join(bytes(part) for part in parts)[4:])
    _, body = decode_response_header(frame, response_class.API_KEY, version)
    return response_class.decode(Reader(frame, body), version)


def _handshake(gate, info, mechanism: str):
    return _decode(gate.dispatch(_frame(SaslHandshakeRequest(mechanism=mechanism), 1), info), SaslHandshakeResponse, 1)


def _authenticate(gate, info, token: bytes, version: int = 2):
    return _decode(gate.dispatch(_frame(SaslAuthenticateRequest(auth_bytes=token), version), info),
                   SaslAuthenticateResponse, version)


def test_plain_login_sets_the_principal_and_opens_the_broker():
    gate, broker, info = _gate()
    assert gate.dispatch(_frame(ApiVersionsRequest(), 3), info) == b"answered"  # ApiVersions before the login
    assert _handshake(gate, info, "PLAIN").mechanisms == ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]
    answer = _authenticate(gate, info, b"\0alice\0alice-secret")
    assert answer.error_code == 0 and answer.session_lifetime_ms == 0
    assert info.principal == "User:alice"
    assert gate.dispatch(_frame(MetadataRequest(topics=[]), 12), info) == b"answered"
    assert broker.seen == [ApiVersionsRequest.API_KEY, MetadataRequest.API_KEY]


def test_scram_login():
    gate, _, info = _gate()
    _handshake(gate, info, "SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", "bob", "bob-secret")
    server_first = _authenticate(gate, info, client.first(), version=1).auth_bytes
    assert info.principal == "User:ANONYMOUS"
    client.verify(_authenticate(gate, info, client.final(server_first), version=1).auth_bytes)
    assert info.principal == "User:bob" and gate.authenticated


def test_a_wrong_password_is_answered_then_closed_after_the_delay():
    gate, broker, info = _gate(failure_delay_s=0.25)
    _handshake(gate, info, "PLAIN")
    with pytest.raises(CloseConnection, match="failed authentication.*user alice") as closed:
        gate.dispatch(_frame(SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"), 2), info)
    assert closed.value.delay_s == 0.25
    answer = _decode(closed.value.answer, SaslAuthenticateResponse, 2)
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == "Authentication failed: Invalid username or password"
    assert info.principal == "User:ANONYMOUS" and broker.seen == []


def test_a_disabled_mechanism_gets_the_enabled_list():
    gate, _, info = _gate()
    with pytest.raises(CloseConnection, match="SCRAM-SHA-512 is not enabled") as closed:
        gate.dispatch(_frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1), info)
    answer = _decode(closed.value.answer, SaslHandshakeResponse, 1)
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]


@pytest.mark.parametrize("request_, version", [
    (MetadataRequest(topics=[]), 12),  # a request before authentication
    (SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 2),  # no handshake first
])
def test_requests_out_of_order_close_the_connection(request_, version):
    gate, broker, info = _gate()
    with pytest.raises(CloseConnection):
        gate.dispatch(_frame(request_, version), info)
    assert broker.seen == []


def test_after_a_v0_handshake_the_tokens_are_bare_frames():
    gate, _, info = _gate()
    answer = _decode(gate.dispatch(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 0), info), SaslHandshakeResponse, 0)
    assert answer.error_code == 0
    assert gate.dispatch(bytearray(b"\0alice\0alice-secret"), info) == [b"\0\0\0\0"]
    assert info.principal == "User:alice"


def test_a_bad_bare_token_closes_without_an_answer():
    gate, _, info = _gate()
    gate.dispatch(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 0), info)
    with pytest.raises(CloseConnection, match="Invalid username or password") as closed:
        gate.dispatch(bytearray(b"\0alice\0nope"), info)
    assert closed.value.answer is None


def test_re_authentication_renews_the_session_and_an_expired_one_closes():
    clock = _Clock()
    gate, broker, info = _gate(max_reauth_ms=1000, clock=clock)
    _handshake(gate, info, "PLAIN")
    assert _authenticate(gate, info, b"\0alice\0alice-secret").session_lifetime_ms == 1000
    clock.now_ms += 900
    assert gate.dispatch(_frame(MetadataRequest(topics=[]), 12), info) == b"answered"
    _handshake(gate, info, "PLAIN")  # KIP-368: log in again on the same connection
    assert _authenticate(gate, info, b"\0alice\0alice-secret").session_lifetime_ms == 1000
    clock.now_ms += 900
    assert gate.dispatch(_frame(MetadataRequest(topics=[]), 12), info) == b"answered"  # the renewed session
    clock.now_ms += 100
    with pytest.raises(CloseConnection, match="has expired without re-authentication"):
        gate.dispatch(_frame(MetadataRequest(topics=[]), 12), info)
    assert broker.seen == [MetadataRequest.API_KEY, MetadataRequest.API_KEY]


def test_re_authentication_keeps_the_principal_and_the_mechanism():
    gate, _, info = _gate(max_reauth_ms=1000)
    _handshake(gate, info, "PLAIN")
    _authenticate(gate, info, b"\0alice\0alice-secret")
    _handshake(gate, info, "PLAIN")
    with pytest.raises(CloseConnection, match="Cannot change principals during re-authentication"):
        gate.dispatch(_frame(SaslAuthenticateRequest(auth_bytes=b"\0eve\0eve-secret"), 2), info)
    gate, _, info = _gate(max_reauth_ms=1000)
    _handshake(gate, info, "PLAIN")
    _authenticate(gate, info, b"\0alice\0alice-secret")
    with pytest.raises(CloseConnection, match="same mechanism"):
        gate.dispatch(_frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1), info)


def test_a_token_that_expires_first_shortens_the_session():
    from gregor.protocol.oauthbearer import client_message, unsecured_token
    clock = _Clock()
    gate, _, info = _gate(max_reauth_ms=60_000, clock=clock)
    _handshake(gate, info, "OAUTHBEARER")
    token = unsecured_token({"sub": "dana", "exp": clock.now_ms // 1000 + 10})
    assert _authenticate(gate, info, client_message(token)).session_lifetime_ms == 10_000
    assert info.principal == "User:dana"


def test_without_re_authentication_a_late_handshake_goes_to_the_broker():
    gate, broker, info = _gate()
    _handshake(gate, info, "PLAIN")
    assert _authenticate(gate, info, b"\0alice\0alice-secret").session_lifetime_ms == 0
    # the broker's SaslHandshake handler answers ILLEGAL_SASL_STATE
    assert gate.dispatch(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 1), info) == b"answered"


def test_both_listener_tables_advertise_the_sasl_apis():
    from gregor.broker.handlers import client_handlers, quorum_handlers
    for table in (client_handlers(), quorum_handlers()):
        assert (table[17].min_version, table[17].max_version) == (0, 1)
        assert (table[36].min_version, table[36].max_version) == (0, 2)
