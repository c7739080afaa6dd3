"""One broker per module with every kind of listener at once, and certificates and token signing
keys per session."""

from __future__ import annotations

import os

import pytest

from tests.broker_process import BrokerProcess, free_port
from tests.security.certificates import Certificates, make_certificates
from tests.security.signed_tokens import AUDIENCE, ISSUER, SigningKeys, make_signing_keys

PLAIN_USERS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
SCRAM_USERS = {"bob": "bob-secret", "carol": "carol-secret"}


@pytest.fixture(scope="session")
def certificates(tmp_path_factory) -> Certificates:
    return make_certificates(str(tmp_path_factory.mktemp("certificates")))


@pytest.fixture(scope="session")
def signing_keys(tmp_path_factory) -> SigningKeys:
    return make_signing_keys(str(tmp_path_factory.mktemp("jwks")))


class SecureBroker:
    """The broker process and its listeners' ports by name."""

    def __init__(self, process: BrokerProcess, ports: dict[str, int], certificates: Certificates,
                 signing_keys: SigningKeys) -> None:
        self.process = process
        self.ports = ports
        self.certificates = certificates
        self.signing_keys = signing_keys

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory, certificates, signing_keys) -> SecureBroker:
    base = tmp_path_factory.mktemp("secure-broker")
    process = BrokerProcess(os.path.join(str(base), "data"))
    ports = {"PLAINTEXT": process.port,
             **{name: free_port() for name in ("SSL", "SASL_PLAINTEXT", "SASL_SSL", "MTLS", "REAUTH", "JWT")}}
    process.overrides.update({
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                          "SASL_SSL:SASL_SSL,MTLS:SSL,REAUTH:SASL_PLAINTEXT,JWT:SASL_SSL,CONTROLLER:PLAINTEXT",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": certificates.keystore("broker"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca,
        "ssl.truststore.password": "never-shown",  # unused by a PEM store; DescribeConfigs must hide it
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=eng.*$/$1/,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_USERS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_USERS,
        "connection.failed.authentication.delay.ms": "50",
        "listener.name.reauth.sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.reauth.connections.max.reauth.ms": "1500",
        # signed OAUTHBEARER tokens, checked against the session's JWKS
        "listener.name.jwt.sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.jwt.oauthbearer.sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": signing_keys.jwks_url,
        "sasl.oauthbearer.expected.audience": AUDIENCE, "sasl.oauthbearer.expected.issuer": ISSUER,
    })
    process.start()
    try:
        from confluent_kafka.admin import (
            AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
        )
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        upsertions = [UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, 4096), password.encode())
                      for user, password in SCRAM_USERS.items()
                      for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)]
        for future in admin.alter_user_scram_credentials(upsertions).values():
            future.result(30)
        described = admin.describe_user_scram_credentials(list(SCRAM_USERS))  # read from the broker's image
        assert all(len(future.result(30).scram_credential_infos) == 2 for future in described.values())
        yield SecureBroker(process, ports, certificates, signing_keys)
    finally:
        process.stop()
