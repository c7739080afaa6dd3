"""A controller's own listener stores changed through its controller listener (KIP-919): the
IncrementalAlterConfigs handler checks them before anything is committed (a store that does not
load is INVALID_REQUEST and the quorum is never asked), and once committed new handshakes get the
new certificate while a connection opened before keeps working. On a combined node one ListenerTls
covers the client and the controller listener; another node's change passes unchecked."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from gregor.broker.config import BrokerConfig
from gregor.broker.handlers import QuorumContext
from gregor.broker.handlers.alter_configs import handle_incremental
from gregor.broker.network import ConnectionInfo, ListenerTransport
from gregor.broker.security.listener_tls import ListenerTls
from gregor.controller.operations import AlterConfigsResult
from gregor.metadata.image import BROKER_RESOURCE, MetadataImage
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import IncrementalAlterConfigsRequest, RequestHeader

KEY = "listener.name.controller.ssl.keystore.location"


def combined(certificates) -> BrokerConfig:
    return BrokerConfig({
        "process.roles": "broker,controller", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9095,2@127.0.0.1:9097",
        "listeners": "SSL://127.0.0.1:9093,CONTROLLER://127.0.0.1:9095", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "SSL:SSL,CONTROLLER:SSL", "inter.broker.listener.name": "SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": certificates.keystore("broker"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca})


class Controller:
    """The quorum as the handler sees it: each submitted change is accepted (and counted)."""

    def __init__(self, listener_tls: ListenerTls) -> None:
        self.node_id = 1
        self.image = MetadataImage()
        self.listener_tls = listener_tls
        self.controller = self
        self.submitted: list[list[str]] = []

    def incremental_alter_configs(self, resources: list[Any], validate_only: bool) -> list[AlterConfigsResult]:
        self.submitted.append([resource.resource_name for resource in resources])
        return [AlterConfigsResult(resource.resource_type, resource.resource_name) for resource in resources]

    async def submit(self, operation: Any) -> Any:
        return operation()


def _alter(quorum: Controller, *changes: tuple[str, str]) -> list[tuple[str, int, str | None]]:
    request = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=BROKER_RESOURCE, resource_name=node, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name=KEY, config_operation=0, value=value)])
        for node, value in changes])
    context = QuorumContext(quorum, RequestHeader(request_api_key=44, request_api_version=1),  # type: ignore[arg-type]
                            ConnectionInfo("127.0.0.1:5000", "CONTROLLER", 1, "User:ANONYMOUS"), {}, 0)
    answer = asyncio.run(handle_incremental(context, request))
    return [(item.resource_name, item.error_code, item.error_message) for item in answer.responses]


def _pem_der(path: str) -> bytes:
    with open(path, encoding="ascii") as handle:
        text = handle.read()
    return ssl.PEM_cert_to_DER_cert(text[text.index("-----BEGIN CERTIFICATE-----"):])


def test_the_controller_listener_reloads_its_keystore_after_a_checked_change(certificates):
    config = combined(certificates)
    listener_tls = ListenerTls(config)
    transports = {name: config.listener_security[name].transport(lambda user, mechanism: None)
                  for name in ("SSL", "CONTROLLER")}
    for name, transport in transports.items():
        listener_tls.track(name, transport)
    quorum = Controller(listener_tls)
    renewed = certificates.issue("controller-renewed", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    client = ssl.create_default_context(cafile=certificates.ca)

    async def presented(port: int) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname="localhost")
        certificate = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.close()
        return certificate

    async def scenario() -> None:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(100):
                writer.write(data)
        servers = {name: await asyncio.start_server(echo, "127.0.0.1", 0, ssl=transport.ssl_context)
                   for name, transport in transports.items() if isinstance(transport, ListenerTransport)}
        ports = {name: server.sockets[0].getsockname()[1] for name, server in servers.items()}
        old_reader, old_writer = await asyncio.open_connection("127.0.0.1", ports["CONTROLLER"], ssl=client,
                                                               server_hostname="localhost")
        loop = asyncio.get_running_loop()
        refused = await loop.run_in_executor(None, _alter, quorum, ("1", certificates.path("missing.pem")))
        assert refused[0][:2] == ("1", ErrorCode.INVALID_REQUEST) and quorum.submitted == []
        assert "Validation of dynamic config update of SSLFactory failed" in str(refused[0][2])
        impostor = certificates.issue("impostor", "/CN=impostor", "DNS:localhost,IP:127.0.0.1")
        refused = await loop.run_in_executor(None, _alter, quorum, ("1", impostor))
        assert "Keystore DistinguishedName does not match" in str(refused[0][2]) and quorum.submitted == []
        assert await presented(ports["CONTROLLER"]) == _pem_der(certificates.keystore("broker"))

        accepted = await loop.run_in_executor(None, _alter, quorum, ("1", renewed), ("2", "/not/read/here.pem"))
        assert accepted == [("1", ErrorCode.NONE, None), ("2", ErrorCode.NONE, None)]
        assert quorum.submitted == [["1", "2"]]  # another node's stores are that node's to load
        assert await presented(ports["CONTROLLER"]) == _pem_der(renewed)
        assert await presented(ports["SSL"]) == _pem_der(certificates.keystore("broker"))  # its own key
        old_writer.write(b"still here")
        assert await old_reader.readexactly(10) == b"still here"  # opened before the reload
        old_writer.close()
        for server in servers.values():
            server.close()

    asyncio.run(scenario())
