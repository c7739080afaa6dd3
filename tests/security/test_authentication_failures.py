"""Authentication failures as Kafka answers them, against the broker of this package: each is
logged once with the peer's address and leaves the broker serving everyone else."""

from __future__ import annotations

import socket
import ssl
import struct
import time

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import MetadataRequest, SaslHandshakeRequest, SaslHandshakeResponse
from gregor.protocol.primitives import Reader
from tests.security.test_secure_clients import gregor_config, librdkafka_config

pytestmark = pytest.mark.interop


def _read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed frame, or b"" when the broker closed the connection."""
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return b""
        head += chunk
    size = struct.unpack(">i", head)[0]
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return b""
        body += chunk
    return body


def _log_lines(broker, text: str) -> list[str]:
    with open(broker.process.log_path, encoding="utf-8", errors="replace") as handle:
        return [line for line in handle if text in line]


def _wait_for_log(broker, text: str) -> list[str]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = _log_lines(broker, text)
        if lines:
            return lines
        time.sleep(0.05)
    return []


def test_a_wrong_password_fails_the_login(secure_broker):
    from gregor import Producer
    from gregor.client.errors import KafkaException
    config = {**gregor_config(secure_broker, "sasl_ssl-scram-256"), "sasl.password": "not-bobs", "max.block.ms": 1000}
    with Producer(config) as producer:
        with pytest.raises(KafkaException) as failed:
            producer.partitions_for("anything")
    assert "SASL_AUTHENTICATION_FAILED" in str(failed.value) or "invalid credentials" in str(failed.value)
    lines = _wait_for_log(secure_broker, "(SCRAM-SHA-256, user bob): Authentication failed")
    assert lines and all("closing connection from 127.0.0.1:" in line for line in lines)


def test_a_refused_login_is_raised_at_once_not_after_the_timeout(secure_broker):
    """As Kafka's clients raise an AuthenticationException at once: the caller gets
    SASL_AUTHENTICATION_FAILED itself, not the timeout of a client that kept trying brokers."""
    from gregor import AdminClient
    from gregor.client.errors import KafkaException
    config = {**gregor_config(secure_broker, "sasl_ssl-scram-256"), "sasl.password": "not-bobs",
              "default.api.timeout.ms": 20000}
    with AdminClient(config) as admin:
        with pytest.raises(KafkaException) as failed:
            admin.list_topics()
    assert failed.value.name == "SASL_AUTHENTICATION_FAILED", failed.value


def test_librdkafka_reports_the_brokers_reason(secure_broker):
    from confluent_kafka import KafkaError, Producer
    errors: list = []
    config = {**librdkafka_config(secure_broker, "sasl_plaintext-plain"), "sasl.password": "wrong",
              "error_cb": errors.append}
    producer = Producer(config)
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "Authentication failed: Invalid username or password" in errors[0].str()


def test_a_disabled_mechanism_is_answered_with_the_enabled_ones(secure_broker):
    with socket.create_connection(("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"]), timeout=10) as sock:
        sock.sendall(encode_request(1, "test", SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1))
        frame = memoryview(_read_frame(sock))
        _, body = decode_response_header(frame, SaslHandshakeRequest.API_KEY, 1)
        answer = SaslHandshakeResponse.decode(Reader(frame, body), 1)
        assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert answer.mechanisms == ["PLAIN", "SCRAM-SHA-256"]
        assert _read_frame(sock) == b""  # and the connection is closed


def test_a_request_before_authentication_closes_the_connection(secure_broker):
    with socket.create_connection(("127.0.0.1", secure_broker.ports["SASL_PLAINTEXT"]), timeout=10) as sock:
        sock.sendall(encode_request(1, "test", MetadataRequest(topics=None), 1))
        assert _read_frame(sock) == b""
    assert _wait_for_log(secure_broker, "unexpected request (API key 3) before SASL authentication")


def test_a_plaintext_client_on_a_tls_port_leaves_the_broker_serving(secure_broker):
    from gregor import Producer
    with socket.create_connection(("127.0.0.1", secure_broker.ports["SSL"]), timeout=10) as sock:
        sock.sendall(encode_request(1, "test", MetadataRequest(topics=None), 1))
        assert _read_frame(sock) == b""
    with ssl.create_default_context(cafile=secure_broker.certificates.ca).wrap_socket(
            socket.create_connection(("127.0.0.1", secure_broker.ports["MTLS"]), timeout=10),
            server_hostname="localhost") as sock:  # no client certificate where one is required
        with pytest.raises((ssl.SSLError, ConnectionError)):
            sock.sendall(encode_request(1, "test", MetadataRequest(topics=None), 1))
            if not _read_frame(sock):
                raise ConnectionError("closed")
    with Producer(gregor_config(secure_broker, "ssl")) as producer:
        assert producer.partitions_for("after-the-failures")
    assert _wait_for_log(secure_broker, "TLS handshake failed")


@pytest.mark.slow
def test_librdkafka_re_authenticates_before_its_session_ends(secure_broker):
    """The REAUTH listener's sessions last 1.5 s (connections.max.reauth.ms): librdkafka logs in
    again on its connection (KIP-368), so the broker never has to close one for an ended session."""
    from confluent_kafka import Producer
    config = {**librdkafka_config(secure_broker, "sasl_plaintext-scram-256"),
              "bootstrap.servers": secure_broker.address("REAUTH")}
    producer = Producer(config)
    delivered: list = []
    deadline = time.monotonic() + 4  # past two session lifetimes
    while time.monotonic() < deadline:
        producer.produce("reauth", b"x", on_delivery=lambda error, message: delivered.append(error))
        producer.poll(0.25)
    assert producer.flush(10) == 0
    assert delivered and all(error is None for error in delivered)
    assert _log_lines(secure_broker, "has expired without re-authentication") == []


@pytest.mark.slow
def test_gregor_client_re_authenticates_before_its_session_ends(secure_broker):
    from gregor import Producer
    config = {**gregor_config(secure_broker, "sasl_plaintext-scram-256"),
              "bootstrap.servers": secure_broker.address("REAUTH")}
    expired_before = len(_log_lines(secure_broker, "has expired without re-authentication"))
    with Producer(config) as producer:
        deadline = time.monotonic() + 4  # past two session lifetimes of 1.5 s
        while time.monotonic() < deadline:
            producer.send("reauth-gregor", b"x").get(10)
            time.sleep(0.2)
    assert len(_log_lines(secure_broker, "has expired without re-authentication")) == expired_before
