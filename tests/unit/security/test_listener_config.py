"""Listener security from Kafka's keys: what is served, and what is refused at start with one line
instead of being served weaker than asked (a secured listener is never plain)."""

from __future__ import annotations

import ssl
import subprocess

import pytest

from gregor.broker.config import BrokerConfig, ConfigError

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


def _tls(certificates, **extra):
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": certificates.keystore("broker"),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca, **extra}


def test_every_protocol_at_once(certificates):
    config = BrokerConfig({
        "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,SASL_PLAINTEXT://127.0.0.1:9094,"
                     "SASL_SSL://127.0.0.1:9095,MTLS://127.0.0.1:9096",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                          "SASL_SSL:SASL_SSL,MTLS:SSL,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.mtls.ssl.client.auth": "required",
        **_tls(certificates)})
    security = config.listener_security
    assert security["PLAINTEXT"].ssl_context is None and not security["PLAINTEXT"].mechanisms
    assert security["SSL"].ssl_context.verify_mode == ssl.CERT_NONE
    assert security["MTLS"].ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert security["SASL_PLAINTEXT"].ssl_context is None
    assert security["SASL_PLAINTEXT"].mechanisms == ("PLAIN", "SCRAM-SHA-256")
    assert security["SASL_SSL"].mechanisms == ("SCRAM-SHA-512",)  # the per-listener key wins
    assert security["SASL_PLAINTEXT"].jaas["PLAIN"].users() == {"alice": "alice-secret"}
    assert security["SASL_SSL"].transport(lambda user, mechanism: None).authenticate is not None
    assert security["SSL"].transport(lambda user, mechanism: None).authenticate is None


def test_inline_pem_and_pkcs12_key_material(certificates, tmp_path):
    with open(certificates.cert("broker")) as cert, open(certificates.key("broker")) as key:
        BrokerConfig({"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.type": "PEM",
                      "ssl.keystore.certificate.chain": cert.read(), "ssl.keystore.key": key.read()})
    store = tmp_path / "broker.p12"
    subprocess.run(["openssl", "pkcs12", "-export", "-in", certificates.cert("broker"), "-inkey",
                    certificates.key("broker"), "-out", str(store), "-passout", "pass:store-secret"], check=True)
    config = BrokerConfig({"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.type": "PKCS12",
                           "ssl.keystore.location": str(store), "ssl.keystore.password": "store-secret"})
    assert config.listener_security["SSL"].ssl_context is not None
    with pytest.raises(ConfigError, match="cannot read PKCS12 store"):
        BrokerConfig({"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.type": "PKCS12",
                      "ssl.keystore.location": str(store), "ssl.keystore.password": "wrong"})


@pytest.mark.parametrize("properties, message", [
    ({"listeners": "SSL://127.0.0.1:9093"}, "a TLS listener needs its key and certificate"),
    ({"listeners": "SASL_SSL://127.0.0.1:9093", "ssl.keystore.location": "/x.jks"},
     "ssl.keystore.type: JKS stores cannot be read by Gregor"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093"},
     r"enables GSSAPI \(Kafka's default\), which Gregor does not serve"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "PLAIN"},
     "listener.name.sasl_plaintext.plain.sasl.jaas.config: listener SASL_PLAINTEXT enables PLAIN"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "SCRAM-SHA-256,GSSAPI"},
     "enables GSSAPI, which Gregor does not serve"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092", "listener.name.plaintext.max.connections": "5"},
     "Gregor does not honour max.connections per listener"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092", "listener.name.external.ssl.client.auth": "required"},
     "no listener named EXTERNAL"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
      "listener.name.sasl_plaintext.connections.max.reauth.ms": "-5"}, "connections.max.reauth.ms: must be 0"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": "PlainLoginModule required user_a=\"b\""},
     "must end with ';'"),
    ({"listeners": "INTERNAL://127.0.0.1:9092"}, "no security protocol defined for listener INTERNAL"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092", "advertised.listeners": "OTHER://broker.example:9093"},
     "no security protocol defined for listener OTHER"),
])
def test_what_cannot_be_honoured_is_refused(properties, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(properties)


@pytest.mark.parametrize("extra, message", [
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "ssl.cipher.suites"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols"),
    ({"ssl.client.auth": "sometimes"}, "ssl.client.auth: must be none, requested or required"),
    ({"ssl.principal.mapping.rules": "RULE:oops"}, "ssl.principal.mapping.rules"),
    ({"ssl.keystore.location": "/nonexistent.pem"}, "cannot load key and certificate"),
])
def test_bad_tls_keys_are_refused(certificates, extra, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig({"listeners": "SSL://127.0.0.1:9093", **_tls(certificates, **extra)})


def test_a_plaintext_listener_named_otherwise_is_served():
    config = BrokerConfig({"listeners": "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094",
                           "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"})
    assert [config.security_protocol(e.listener) for e in config.listeners] == ["PLAINTEXT", "PLAINTEXT"]


def _broker_node(certificates, **extra):
    return {"process.roles": "broker", "node.id": "2", "controller.quorum.voters": "1@127.0.0.1:9093",
            "listeners": "BROKER://127.0.0.1:9092", "inter.broker.listener.name": "BROKER",
            "listener.security.protocol.map": "BROKER:SASL_SSL,CONTROLLER:SSL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512", **_tls(certificates, **extra)}


def test_a_nodes_own_connections_are_secured_as_the_listeners_ask(certificates):
    jaas = 'x.ScramLoginModule required username="node" password="node-secret";'
    config = BrokerConfig(_broker_node(certificates, **{
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.broker.scram-sha-512.sasl.jaas.config": jaas}))
    inter_broker, controller = config.peer_security["inter_broker"], config.peer_security["controller"]
    assert (inter_broker.mechanism, inter_broker.username, inter_broker.password) == ("SCRAM-SHA-512", "node",
                                                                                      "node-secret")
    assert inter_broker.ssl_context.check_hostname and controller.ssl_context is not None
    assert controller.mechanism is None  # the controller listener is SSL, without SASL
    assert BrokerConfig({"listeners": "SSL://127.0.0.1:9093", **_tls(certificates)}).peer_security == {}


@pytest.mark.parametrize("extra, message", [
    ({}, "sasl.mechanism.inter.broker.protocol: GSSAPI is not among listener BROKER's mechanisms"),
    ({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"},
     'listener.name.broker.scram-sha-512.sasl.jaas.config: the broker\'s own connections on listener BROKER need '
     'username="..." password="..."'),
    ({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512", "connections.max.reauth.ms": "60000",
      "listener.name.broker.scram-sha-512.sasl.jaas.config": 'x.ScramLoginModule required username="n" password="p";'},
     "own connections to listener BROKER do not re-authenticate"),
])
def test_a_node_that_cannot_log_in_to_its_peers_is_refused(certificates, extra, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(_broker_node(certificates, **extra))


def test_check_config_hides_secrets(certificates):
    from gregor.cli.server_check import changed_values
    config = BrokerConfig({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "PLAIN",
                           "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
                           "ssl.truststore.password": "secret", "listener.name.sasl_plaintext.ssl.key.password": "x"})
    lines = changed_values(config)
    assert "listener.name.sasl_plaintext.plain.sasl.jaas.config=[hidden]" in lines
    assert "ssl.truststore.password=[hidden]" in lines
    assert "listener.name.sasl_plaintext.ssl.key.password=[hidden]" in lines
    assert "sasl.enabled.mechanisms=PLAIN" in lines
    assert not any("alice-secret" in line or "=secret" in line for line in lines)
