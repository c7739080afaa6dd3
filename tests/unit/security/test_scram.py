"""SCRAM against RFC 7677's SCRAM-SHA-256 example exchange, and the failures a server must catch."""

from __future__ import annotations

import base64

import pytest

from gregor.protocol.scram import ScramClient, ScramError, ScramServer, new_credential

CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _server(password: str = "pencil") -> ScramServer:
    credential = new_credential("SCRAM-SHA-256", password, 4096, SALT)
    return ScramServer("SCRAM-SHA-256", lambda user: credential if user == "user" else None,
                       nonce=lambda: SERVER_NONCE)


def test_the_client_writes_rfc_7677s_messages():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: CLIENT_NONCE)
    assert client.first() == CLIENT_FIRST
    assert client.final(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)


def test_the_server_answers_rfc_7677s_messages():
    server = _server()
    assert server.first(CLIENT_FIRST) == SERVER_FIRST
    assert server.final(CLIENT_FINAL) == SERVER_FINAL


def test_a_wrong_password_fails_at_the_proof():
    server = _server(password="not pencil")
    server.first(CLIENT_FIRST)
    with pytest.raises(ScramError, match="invalid credentials"):
        server.final(CLIENT_FINAL)


def test_an_unknown_user_looks_like_a_wrong_password():
    server = _server()
    answer = server.first(b"n,,n=nobody,r=abc")
    assert answer.startswith(b"r=abc") and b",i=4096" in answer  # a made-up salt, not an early refusal
    client_final = b"c=biws,r=" + answer.split(b",")[0][2:] + b",p=" + base64.b64encode(b"x" * 32)
    with pytest.raises(ScramError, match="invalid credentials"):
        server.final(client_final)


def test_a_replayed_nonce_and_channel_binding_are_refused():
    server = _server()
    server.first(CLIENT_FIRST)
    with pytest.raises(ScramError, match="Invalid client nonce"):
        server.final(CLIENT_FINAL.replace(b"$k0", b"$k1"))
    with pytest.raises(ScramError, match="channel binding"):
        _server().first(b"p=tls-unique,,n=user,r=abc")


def test_a_client_rejects_a_server_that_does_not_know_the_password():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: CLIENT_NONCE)
    client.final(SERVER_FIRST)
    with pytest.raises(ScramError, match="server signature"):
        client.verify(b"v=" + base64.b64encode(b"\0" * 32))


def test_sha_512_round_trip_with_an_escaped_user_name():
    credential = new_credential("SCRAM-SHA-512", "s3cret", 8192)
    server = ScramServer("SCRAM-SHA-512", lambda user: credential if user == "a,b=c" else None)
    client = ScramClient("SCRAM-SHA-512", "a,b=c", "s3cret")
    client.verify(server.final(client.final(server.first(client.first()))))
    assert server.user == "a,b=c"
