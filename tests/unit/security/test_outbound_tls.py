"""This node's own connections to other nodes take up a reloaded inter-broker listener's stores
(Kafka's reconfigurable client channel builders, KIP-226): a peer that trusts only a new client
certificate refuses the connections opened before the reload and accepts those opened after it,
while a connection already open keeps working. A client keystore of another subject is refused."""

from __future__ import annotations

import asyncio
import ssl

from gregor.broker.config import BrokerConfig
from gregor.broker.peer_channel import open_peer
from gregor.broker.security.listener_tls import ListenerTls
from tests.unit.security.test_controller_listener_tls import combined


def test_new_peer_connections_present_the_reloaded_client_certificate(certificates):
    config = combined(certificates)
    listener_tls = ListenerTls(config)
    security = config.peer_security["inter_broker"]
    renewed = certificates.issue("broker-rogue", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", ca="rogue-ca")
    peer = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)  # another broker, trusting only the new client certificate
    peer.load_cert_chain(certificates.keystore("broker"))
    peer.load_verify_locations(certificates.path("rogue-ca.pem"))
    peer.verify_mode = ssl.CERT_REQUIRED

    async def accepted(port: int) -> bool:
        try:
            reader, writer = await open_peer("127.0.0.1", port, security, "replica-fetcher-1")
            writer.write(b"?")
            answer = await reader.read(1)  # TLS 1.3: a refused certificate shows on the first read
            writer.close()
            return answer == b"!"
        except (ssl.SSLError, ConnectionError):
            return False

    async def scenario() -> list[bool]:
        async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await reader.read(1):
                writer.write(b"!")
        server = await asyncio.start_server(greet, "127.0.0.1", 0, ssl=peer)
        port = server.sockets[0].getsockname()[1]
        before = await accepted(port)
        refused = listener_tls.check({"listener.name.ssl.ssl.keystore.location": certificates.keystore("alice")})
        assert refused is not None and "Keystore DistinguishedName does not match" in refused.message
        assert listener_tls.check({"listener.name.ssl.ssl.keystore.location": renewed}) is None
        listener_tls.apply({"listener.name.ssl.ssl.keystore.location": renewed})
        after = await accepted(port)
        server.close()
        return [before, after]

    assert asyncio.run(scenario()) == [False, True]
    assert config.peer_security["controller"].ssl_context is not security.ssl_context  # the CONTROLLER stores stay


def test_a_connection_open_before_the_reload_keeps_its_certificate(certificates):
    config = combined(certificates)
    listener_tls = ListenerTls(config)
    security = config.peer_security["inter_broker"]
    peer = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    peer.load_cert_chain(certificates.keystore("broker"))
    peer.load_verify_locations(certificates.ca)
    peer.verify_mode = ssl.CERT_REQUIRED

    async def scenario() -> list[bytes]:
        presented: list[bytes] = []

        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            presented.append(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
            while data := await reader.read(100):
                writer.write(data)
        server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=peer)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await open_peer("127.0.0.1", port, security, "replica-fetcher-1")
        writer.write(b"1")
        await reader.readexactly(1)
        renewed = certificates.issue("broker-renewed-client", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
        listener_tls.apply({"listener.name.ssl.ssl.keystore.location": renewed})
        writer.write(b"2")
        assert await reader.readexactly(1) == b"2"  # the open connection goes on
        second_reader, second_writer = await open_peer("127.0.0.1", port, security, "replica-fetcher-1")
        second_writer.write(b"3")
        await second_reader.readexactly(1)
        for stream in (writer, second_writer):
            stream.close()
        server.close()
        return presented

    first, second = asyncio.run(scenario())
    assert first != second


def test_a_broker_only_node_checks_the_stores_of_the_controller_listener_it_connects_to(certificates):
    config = BrokerConfig({
        "process.roles": "broker", "node.id": "2", "controller.quorum.voters": "1@127.0.0.1:9095",
        "controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://127.0.0.1:9092",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
        "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca})
    listener_tls = ListenerTls(config)
    before = config.peer_security["controller"].ssl_context
    refused = listener_tls.check({"listener.name.controller.ssl.truststore.location": certificates.path("nope.pem")})
    assert refused is not None and refused.listener == "CONTROLLER"
    assert "no TLS listener PLAINTEXT" in str(listener_tls.check({"listener.name.plaintext.ssl.keystore.type": "PEM"}))
    change = {"listener.name.controller.ssl.truststore.location": certificates.path("rogue-ca.pem")}
    assert listener_tls.check(change) is None
    listener_tls.apply(change)
    assert config.peer_security["controller"].ssl_context is not before
