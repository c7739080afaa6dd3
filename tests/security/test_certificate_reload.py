"""A TLS listener's key store reloaded without a restart, as Kafka's dynamic listener configs do:
IncrementalAlterConfigs on the broker's resource sets `listener.name.ssl.ssl.keystore.location`;
new connections get the new certificate, an open one keeps working, and a store that does not
load or names another subject is refused with INVALID_REQUEST."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import struct

import pytest

from gregor.protocol.headers import encode_request
from gregor.protocol.messages import ApiVersionsRequest
from tests.broker_process import BrokerProcess, free_port

pytestmark = pytest.mark.interop
KEY = "listener.name.ssl.ssl.keystore.location"


def _tls(ca: str, port: int) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=ca)
    return context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")


def _presented(ca: str, port: int) -> bytes:
    with _tls(ca, port) as sock:
        return sock.getpeercert(binary_form=True)


def _api_versions_answered(sock: ssl.SSLSocket, correlation_id: int) -> bool:
    sock.sendall(encode_request(correlation_id, "reload-test", ApiVersionsRequest(), 0))
    head = sock.recv(8)
    size, answered = struct.unpack(">ii", head)
    remaining = size - 4
    while remaining:
        remaining -= len(sock.recv(remaining))
    return answered == correlation_id


def _pem_der(path: str) -> bytes:
    with open(path, encoding="ascii") as handle:
        text = handle.read()
    return ssl.PEM_cert_to_DER_cert(text[text.index("-----BEGIN CERTIFICATE-----"):])


@pytest.fixture
def tls_broker(tmp_path, certificates):
    keystore = str(tmp_path / "listener-keystore.pem")
    shutil.copy(certificates.keystore("broker"), keystore)
    ssl_port = free_port()

    def ready(port: int) -> bool:
        try:
            _presented(certificates.ca, ssl_port)
            return True
        except OSError:
            return False

    process = BrokerProcess(str(tmp_path / "data"), ready=ready)
    process.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{process.port},SSL://127.0.0.1:{ssl_port}",
        "listener.name.ssl.ssl.keystore.type": "PEM", KEY: keystore})
    process.start()
    try:
        yield process, ssl_port, keystore
    finally:
        process.stop()


def _alter(bootstrap: str, value: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
        ConfigEntry(KEY, value, incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def test_a_new_keystore_serves_new_connections_and_old_ones_keep_working(tls_broker, certificates, tmp_path):
    from confluent_kafka import KafkaError, KafkaException, Producer
    process, ssl_port, keystore = tls_broker
    ca = certificates.ca
    assert _presented(ca, ssl_port) == _pem_der(certificates.keystore("broker"))
    open_connection = _tls(ca, ssl_port)

    renewed = certificates.issue("broker-renewed", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    _alter(process.bootstrap, renewed)
    assert _presented(ca, ssl_port) == _pem_der(renewed)
    assert _api_versions_answered(open_connection, 7)  # the connection made before the reload
    open_connection.close()

    producer = Producer({"bootstrap.servers": f"127.0.0.1:{ssl_port}", "security.protocol": "SSL",
                         "ssl.ca.location": ca, "message.timeout.ms": 20000})
    producer.produce("after-reload", b"over the new certificate")
    assert producer.flush(30) == 0

    for bad, reason in [(certificates.issue("impostor", "/CN=impostor", "DNS:localhost,IP:127.0.0.1"),
                         "Keystore DistinguishedName does not match: existing={CN=localhost}, new={CN=impostor}"),
                        (certificates.issue("narrower", "/CN=localhost", "DNS:localhost"),
                         "Keystore SubjectAltNames do not match"),
                        (str(tmp_path / "missing.pem"), "Validation of dynamic config update of SSLFactory failed")]:
        with pytest.raises(KafkaException) as refused:
            _alter(process.bootstrap, bad)
        assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
        assert reason in refused.value.args[0].str()
        assert _presented(ca, ssl_port) == _pem_der(renewed)

    # the same location again, its file replaced: reloaded, as Kafka does when the file changed
    again = certificates.issue("broker-again", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    shutil.copy(again, renewed)
    os.utime(renewed, ns=(os.stat(renewed).st_atime_ns, os.stat(renewed).st_mtime_ns + 1_000_000))
    _alter(process.bootstrap, renewed)
    assert _presented(ca, ssl_port) == _pem_der(again)
