"""Signed OAUTHBEARER tokens on the JWT listener of this package's broker (checked against the
session's JWKS, with the expected issuer and audience): librdkafka hands its token over with
`oauth_cb`, Gregor's client reads it from `sasl.oauthbearer.token.endpoint.url=file://...`."""

from __future__ import annotations

import time
import uuid

import pytest

pytestmark = pytest.mark.interop


def _librdkafka(broker, token: str, **extra) -> dict:
    return {"bootstrap.servers": broker.address("JWT"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": broker.certificates.ca, "sasl.mechanism": "OAUTHBEARER",
            "oauth_cb": lambda _config: (token, time.time() + 600), **extra}


def _gregor(broker, token_path) -> dict:
    return {"bootstrap.servers": broker.address("JWT"), "security.protocol": "SASL_SSL",
            "ssl.truststore.type": "PEM", "ssl.truststore.location": broker.certificates.ca,
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            "sasl.oauthbearer.token.endpoint.url": f"file://{token_path}",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_librdkafka_with_a_signed_token(secure_broker, alg):
    from confluent_kafka import Consumer, Producer, TopicPartition
    config = _librdkafka(secure_broker, secure_broker.signing_keys.token("erin", alg=alg))
    topic = f"jwt-{uuid.uuid4().hex[:8]}"
    producer = Producer(config)
    for i in range(3):
        producer.produce(topic, f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            assert message.error() is None, message.error()
            got.append(message.value())
    consumer.close()
    assert got == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize("claims, reason", [
    ({"lifetime_s": -120}, "Authentication failed: the JWT has expired"),
    ({"forged": True}, "Authentication failed: the JWT's signature is invalid"),
    ({"aud": "another-service"}, "Authentication failed: the JWT's audience 'another-service' holds none"),
])
def test_librdkafka_is_refused_a_bad_token(secure_broker, claims, reason):
    from confluent_kafka import KafkaError, Producer
    errors: list = []
    producer = Producer(_librdkafka(secure_broker, secure_broker.signing_keys.token("erin", **claims),
                                    error_cb=errors.append))
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert reason in errors[0].str()


def test_gregor_client_with_a_token_file(secure_broker, tmp_path):
    from gregor import Consumer, Producer
    from gregor.client.errors import KafkaException
    token_path = tmp_path / "token.jwt"
    token_path.write_text(secure_broker.signing_keys.token("erin", alg="ES256") + "\n")
    config = _gregor(secure_broker, token_path)
    topic = f"jwt-gregor-{uuid.uuid4().hex[:8]}"
    with Producer(config) as producer:
        producer.send(topic, b"signed", partition=0).get(30)
    with Consumer(config, auto_offset_reset="earliest") as consumer:
        consumer.assign([(topic, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            got += [record.value for record in consumer.poll(0.5)]
    assert got == [b"signed"]
    token_path.write_text(secure_broker.signing_keys.token("erin", lifetime_s=-120))  # read again at each login
    with Producer({**config, "max.block.ms": 2000}) as producer:
        with pytest.raises(KafkaException, match="the JWT has expired"):
            producer.partitions_for(topic)
