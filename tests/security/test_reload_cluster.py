"""Certificates renewed without a restart where Kafka renews them besides the client listeners:
a controller's SSL controller listener, changed with IncrementalAlterConfigs sent to that very
listener (KIP-919), by hand or with `gregor configs --bootstrap-controller`, and the brokers' own
side of the inter-broker listener (KIP-226): after a follower's client certificate and its
leader's trust store are both replaced, the follower's replica fetcher connects with the new
certificate and replication goes on.

One controller and two broker-only nodes; the inter-broker listener requires client certificates."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import struct
import time

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import ApiVersionsRequest, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
from gregor.protocol.primitives import Reader
from tests.broker_process import BrokerProcess, free_port
from tests.cli.conftest import in_process, one_error_line
from tests.cluster.quorum import CLUSTER_ID

pytestmark = [pytest.mark.interop, pytest.mark.slow]
SAME_NAMES = ("/CN=localhost", "DNS:localhost,IP:127.0.0.1")


def _tls(ca: str, port: int) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=ca)
    return context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")


def _presented(ca: str, port: int) -> bytes:
    with _tls(ca, port) as sock:
        return sock.getpeercert(binary_form=True)


def _pem_der(path: str) -> bytes:
    with open(path, encoding="ascii") as handle:
        text = handle.read()
    return ssl.PEM_cert_to_DER_cert(text[text.index("-----BEGIN CERTIFICATE-----"):])


def _ask(sock: ssl.SSLSocket, correlation_id: int, request, version: int):
    sock.sendall(encode_request(correlation_id, "reload-test", request, version))
    size = struct.unpack(">i", _exactly(sock, 4))[0]
    frame = memoryview(_exactly(sock, size))
    header, body = decode_response_header(frame, request.API_KEY, version)
    assert header.correlation_id == correlation_id
    return type(request).__name__.replace("Request", ""), frame, body


def _exactly(sock: ssl.SSLSocket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _alter_controller(ca: str, port: int, key: str, value: str) -> IncrementalAlterConfigsResponse.AlterConfigsResourceResponse:
    """IncrementalAlterConfigs on the controller's own broker resource, through its controller listener."""
    request = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=4, resource_name="1", configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name=key, config_operation=0, value=value)])])
    with _tls(ca, port) as sock:
        _, frame, body = _ask(sock, 3, request, 1)
    return IncrementalAlterConfigsResponse.decode(Reader(frame, body), 1).responses[0]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, certificates):
    root = tmp_path_factory.mktemp("reload-cluster")
    controller_keystore = str(root / "controller-keystore.pem")
    shutil.copy(certificates.keystore("broker"), controller_keystore)
    tls = {"ssl.keystore.type": "PEM", "ssl.keystore.location": certificates.keystore("broker"),
           "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca}

    def tls_ready(port: int) -> bool:
        try:
            _presented(certificates.ca, port)
            return True
        except OSError:
            return False
    controller = BrokerProcess(str(root / "controller" / "data"), ready=tls_ready)
    voters = f"1@127.0.0.1:{controller.port}"
    controller.overrides = {"process.roles": "controller", "node.id": "1", "cluster.id": CLUSTER_ID,
                            "listeners": f"CONTROLLER://127.0.0.1:{controller.port}", "controller.quorum.voters": voters,
                            "listener.security.protocol.map": "CONTROLLER:SSL", **tls,
                            "listener.name.controller.ssl.keystore.location": controller_keystore}
    brokers = {}
    for node_id in (2, 3):
        broker = BrokerProcess(str(root / f"broker{node_id}" / "data"))
        broker.overrides = {
            "process.roles": "broker", "node.id": str(node_id), "cluster.id": CLUSTER_ID,
            "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
            "listeners": f"CLIENT://127.0.0.1:{broker.port},INTERNAL://127.0.0.1:{free_port()}",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SSL",
            "inter.broker.listener.name": "INTERNAL", "listener.name.internal.ssl.client.auth": "required",
            "broker.heartbeat.interval.ms": "300", **tls}
        brokers[node_id] = broker
    nodes = [controller, *brokers.values()]
    try:
        for node in nodes:
            os.makedirs(os.path.dirname(node.data_dir), exist_ok=True)
            node.start()
        yield controller, brokers
    finally:
        for node in reversed(nodes):
            node.stop()


def test_the_controller_listener_serves_a_new_keystore_to_new_connections(cluster, certificates, tmp_path):
    controller, _ = cluster
    ca, port = certificates.ca, controller.port
    key = "listener.name.controller.ssl.keystore.location"
    assert _presented(ca, port) == _pem_der(certificates.keystore("broker"))
    open_connection = _tls(ca, port)

    refused = _alter_controller(ca, port, key, str(tmp_path / "missing.pem"))
    assert refused.error_code == ErrorCode.INVALID_REQUEST
    assert refused.error_message.startswith("Validation of dynamic config update of SSLFactory failed")
    impostor = certificates.issue("controller-impostor", "/CN=impostor", SAME_NAMES[1])
    refused = _alter_controller(ca, port, key, impostor)
    assert refused.error_code == ErrorCode.INVALID_REQUEST and "DistinguishedName does not match" in refused.error_message
    assert _presented(ca, port) == _pem_der(certificates.keystore("broker"))

    renewed = certificates.issue("controller-renewed", *SAME_NAMES)
    accepted = _alter_controller(ca, port, key, renewed)
    assert (accepted.error_code, accepted.error_message) == (ErrorCode.NONE, None)
    assert _presented(ca, port) == _pem_der(renewed)
    assert _ask(open_connection, 9, ApiVersionsRequest(), 0)[0] == "ApiVersions"  # opened before the reload
    open_connection.close()


def test_a_follower_fetches_with_its_reloaded_client_certificate(cluster, certificates):
    """Broker 3 gets a client certificate of another CA, and broker 2 trusts only that CA: broker
    3's replica fetcher must present the new certificate, or broker 2 refuses it and an acks=all
    write to a partition broker 2 leads never completes."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
    _, brokers = cluster
    admins = {node_id: AdminClient({"bootstrap.servers": broker.bootstrap}) for node_id, broker in brokers.items()}
    deadline = time.monotonic() + 30
    while len(admins[2].list_topics(timeout=10).brokers) < 2:
        assert time.monotonic() < deadline, "the brokers did not both register"
        time.sleep(0.2)
    rogue = certificates.issue("follower-rogue", *SAME_NAMES, ca="rogue-ca")
    for node_id, key, value in [(3, "listener.name.internal.ssl.keystore.location", rogue),
                                (2, "listener.name.internal.ssl.truststore.location", certificates.path("rogue-ca.pem"))]:
        resource = ConfigResource(ResourceType.BROKER, str(node_id), incremental_configs=[
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
        for future in admins[node_id].incremental_alter_configs([resource]).values():
            future.result(30)
    created = admins[2].create_topics([NewTopic("after-reload", 1, replica_assignment=[[2, 3]],
                                                config={"min.insync.replicas": "2"})])
    created["after-reload"].result(30)
    producer = Producer({"bootstrap.servers": brokers[2].bootstrap, "acks": "all", "message.timeout.ms": 20000})
    failures = []
    for index in range(5):
        producer.produce("after-reload", f"v{index}".encode(), on_delivery=lambda error, _: failures.append(error))
    assert producer.flush(30) == 0
    assert failures == [None] * 5, failures  # each one fetched by broker 3 over the inter-broker listener


def test_an_operator_renews_the_controller_certificate_with_gregor_configs(cluster, certificates, tmp_path, capsys):
    """`gregor configs --bootstrap-controller` (KIP-919) over the SSL controller listener: the
    controller's config is described, its keystore replaced (new handshakes get the new
    certificate), a keystore that does not load is one error line; a broker's listener is not a
    controller's."""
    controller, brokers = cluster
    ca, port = certificates.ca, controller.port
    key = "listener.name.controller.ssl.keystore.location"
    settings = tmp_path / "admin-ssl.properties"
    settings.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={ca}\n")
    tool = ["configs", "--bootstrap-controller", controller.bootstrap, "--command-config", str(settings),
            "--entity-type", "brokers"]

    described = in_process(capsys, *tool, "--entity-name", "1", "--describe", "--all")
    assert described.returncode == 0, described.stderr
    assert described.stdout.startswith("All configs for broker 1 are:\n")
    assert f"  ssl.keystore.location={certificates.keystore('broker')} sensitive=false " \
           f"synonyms={{STATIC_BROKER_CONFIG:ssl.keystore.location={certificates.keystore('broker')}}}" in described.stdout

    renewed = certificates.issue("controller-renewed-by-tool", *SAME_NAMES)
    altered = in_process(capsys, *tool, "--entity-name", "1", "--alter", "--add-config", f"{key}={renewed}")
    assert (altered.returncode, altered.stdout) == (0, "Completed updating config for broker 1.\n"), altered.stderr
    assert _presented(ca, port) == _pem_der(renewed)
    dynamic = in_process(capsys, *tool, "--describe")  # no --entity-name: every controller (here one)
    assert f"  {key}={renewed} sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:{key}={renewed}}}" in dynamic.stdout

    bad = in_process(capsys, *tool, "--entity-name", "1", "--alter", "--add-config", f"{key}={tmp_path / 'gone.pem'}")
    assert bad.returncode == 1
    assert "cannot update the config for broker 1: INVALID_REQUEST: Validation of dynamic config update of SSLFactory" \
        in one_error_line(bad)
    assert _presented(ca, port) == _pem_der(renewed)

    default = in_process(capsys, *tool, "--entity-default", "--alter", "--add-config", "log.retention.ms=86400000")
    assert default.stdout == "Completed updating default config for brokers in the cluster.\n", default.stderr
    assert in_process(capsys, *tool, "--entity-default", "--describe").stdout == (
        "Default configs for brokers in the cluster are:\n"
        "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000}\n")

    at_a_broker = in_process(capsys, "configs", "--bootstrap-controller", brokers[2].bootstrap, "--describe",
                             "--entity-type", "brokers")
    assert at_a_broker.returncode == 1
    assert "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER" \
        in one_error_line(at_a_broker)
