"""The network edge on a TLS listener, in process, on asyncio's loop and on uvloop (which reads a new
connection once before `connection_made` can pause it): the handshake before any Kafka byte, the
principal of a client certificate, and failed handshakes that close only their own connection,
logged once with the peer's address."""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct

import pytest

from gregor.broker.network import ConnectionInfo, ConnectionLimits, KafkaServer, ListenerTransport
from gregor.broker.security.principal_mapping import PrincipalMapper
from gregor.protocol.tls import server_context


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request):
    """Runs a coroutine on the event loop the test is parametrized with."""
    if request.param == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        return uvloop.run
    return asyncio.run


class _Echo:
    """Answers every frame with the connection's principal."""

    def step_done(self) -> None:
        pass  # nothing is left for the end of a step

    def dispatch(self, frame: bytearray, info: ConnectionInfo) -> object:
        text = info.principal.encode()
        return struct.pack(">i", len(text)) + text


def _server_context(certificates, client_auth: str) -> ssl.SSLContext:
    values = {"ssl.keystore.type": "PEM", "ssl.keystore.location": certificates.keystore("broker"),
              "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca,
              "ssl.client.auth": client_auth, "ssl.enabled.protocols": "TLSv1.2,TLSv1.3"}
    return server_context(values.get)


def _client_context(certificates, who: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=certificates.ca)
    if who is not None:
        context.load_cert_chain(certificates.keystore(who))
    return context


async def _serve(certificates, client_auth: str, rules: str = "DEFAULT",
                 limits: ConnectionLimits | None = None) -> tuple[KafkaServer, int]:
    server = KafkaServer(_Echo(), 1024 * 1024, limits)
    transport = ListenerTransport(_server_context(certificates, client_auth), PrincipalMapper(rules).principal)
    port = await server.listen("SSL", "127.0.0.1", 0, transport=transport)
    return server, port


async def _principal(port: int, context: ssl.SSLContext) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
    writer.write(struct.pack(">i", 4) + b"ping")
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    answer = (await reader.readexactly(size)).decode()
    writer.close()
    return answer


@pytest.mark.parametrize("client_auth, who, rules, principal", [
    ("none", "alice", "DEFAULT", "User:ANONYMOUS"),
    ("requested", None, "DEFAULT", "User:ANONYMOUS"),
    ("requested", "alice", "DEFAULT", "User:CN=alice,OU=eng,O=example"),
    ("required", "alice", "RULE:^CN=([^,]+),OU=eng.*$/$1/U,DEFAULT", "User:ALICE"),
])
def test_the_principal_comes_from_the_client_certificate(run, certificates, client_auth, who, rules, principal):
    async def connect() -> str:
        server, port = await _serve(certificates, client_auth, rules)
        try:
            return await _principal(port, _client_context(certificates, who))
        finally:
            await server.close()

    assert run(connect()) == principal


def test_failed_handshakes_close_only_their_connection(run, certificates, caplog):
    async def connect() -> list[str]:
        server, port = await _serve(certificates, "required")
        try:
            # a plaintext Kafka client on the TLS port
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(struct.pack(">i", 10) + struct.pack(">hhi", 18, 0, 1) + b"\0\0")
            assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
            # a client certificate from another CA, and none where one is required
            for who in ("mallory", None):
                with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
                    await _principal(port, _client_context(certificates, who))
            for _ in range(50):
                if not server.connections:
                    break
                await asyncio.sleep(0.02)
            assert not server.connections  # nothing left behind by the failed handshakes
            return [await _principal(port, _client_context(certificates, "alice"))]
        finally:
            await server.close()

    with caplog.at_level(logging.INFO, logger="gregor.network"):
        assert run(connect()) == ["User:CN=alice,OU=eng,O=example"]
    failures = [r.getMessage() for r in caplog.records if "TLS handshake failed" in r.getMessage()]
    assert len(failures) == 3 and all("closing connection from 127.0.0.1:" in line for line in failures)


def test_a_peer_silent_in_the_handshake_is_reaped_like_an_idle_one(run, certificates):
    async def connect() -> int:
        server, port = await _serve(certificates, "none", limits=ConnectionLimits(max_idle_ms=200))
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)  # sends no ClientHello
            assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
            for _ in range(50):
                if not server.connections and not server._admitted:
                    break
                await asyncio.sleep(0.02)
            return len(server.connections) + len(server._admitted)
        finally:
            await server.close()

    assert run(connect()) == 0
