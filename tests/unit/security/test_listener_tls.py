"""A listener's trust store reloaded in place: the handshake moves to the new context, so client
certificates are checked against the new CAs from the next connection on; a key store of another
subject is refused although the listener requires client certificates."""

from __future__ import annotations

import asyncio
import ssl

from gregor.broker.config import BrokerConfig
from gregor.broker.network import ListenerTransport
from gregor.broker.security.listener_tls import ListenerTls


async def _handshake(port: int, certificates, client: str) -> bool:
    context = ssl.create_default_context(cafile=certificates.ca)
    context.load_cert_chain(certificates.cert(client), certificates.key(client))
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
        accepted = await reader.read(1) == b"!"  # TLS 1.3: a refused certificate shows on the first read
        writer.close()
        return accepted
    except (ssl.SSLError, ConnectionError):
        return False


def test_a_new_trust_store_decides_the_next_handshakes(certificates):
    config = BrokerConfig({"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.type": "PEM",
                           "ssl.keystore.location": certificates.keystore("broker"), "ssl.truststore.type": "PEM",
                           "ssl.truststore.location": certificates.ca, "ssl.client.auth": "required"})
    transport = config.listener_security["SSL"].transport(lambda user, mechanism: None)
    listener_tls = ListenerTls(config)
    listener_tls.track("SSL", transport)

    async def scenario() -> list[bool]:
        async def greet(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"!")
            await writer.drain()
            writer.close()
        assert isinstance(transport, ListenerTransport)
        server = await asyncio.start_server(greet, "127.0.0.1", 0, ssl=transport.ssl_context)
        port = server.sockets[0].getsockname()[1]
        before = [await _handshake(port, certificates, "alice"), await _handshake(port, certificates, "mallory")]
        assert listener_tls.check({"listener.name.ssl.ssl.truststore.location": certificates.path("nope.pem")})
        refused = listener_tls.check({"listener.name.ssl.ssl.keystore.location": certificates.keystore("alice")})
        assert refused is not None and "Keystore DistinguishedName does not match" in refused.message
        listener_tls.apply({"listener.name.ssl.ssl.truststore.location": certificates.path("rogue-ca.pem")})
        after = [await _handshake(port, certificates, "alice"), await _handshake(port, certificates, "mallory")]
        server.close()
        return before + after

    assert asyncio.run(scenario()) == [True, False, False, True]
