"""librdkafka, kafka-python, aiokafka, kcat and Gregor's client over SSL, mutual TLS, SASL_PLAINTEXT
and SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, against one broker serving them all."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import uuid

import pytest

pytestmark = pytest.mark.interop

# (listener, mechanism, user, password); SSL listeners need no login, MTLS presents alice's certificate
LOGINS = {
    "ssl": ("SSL", None, None, None),
    "mtls": ("MTLS", None, None, None),
    "sasl_plaintext-plain": ("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"),
    "sasl_plaintext-scram-256": ("SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", "bob-secret"),
    "sasl_ssl-plain": ("SASL_SSL", "PLAIN", "alice", "alice-secret"),
    "sasl_ssl-scram-256": ("SASL_SSL", "SCRAM-SHA-256", "bob", "bob-secret"),
    "sasl_ssl-scram-512": ("SASL_SSL", "SCRAM-SHA-512", "carol", "carol-secret"),
    "sasl_ssl-oauthbearer": ("SASL_SSL", "OAUTHBEARER", "dana", None),  # an unsecured JWT naming dana
}
PROTOCOL = {"SSL": "SSL", "MTLS": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL"}


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def librdkafka_config(broker, case: str) -> dict:
    listener, mechanism, user, password = LOGINS[case]
    config = {"bootstrap.servers": broker.address(listener), "security.protocol": PROTOCOL[listener],
              "ssl.ca.location": broker.certificates.ca}
    if listener == "MTLS":
        config.update({"ssl.certificate.location": broker.certificates.cert("alice"),
                       "ssl.key.location": broker.certificates.key("alice")})
    if mechanism == "OAUTHBEARER":
        config.update({"sasl.mechanism": mechanism, "enable.sasl.oauthbearer.unsecure.jwt": True,
                       "sasl.oauthbearer.config": f"principal={user}"})
    elif mechanism:
        config.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    return config


@pytest.mark.parametrize("case", sorted(LOGINS))
def test_librdkafka(secure_broker, case):
    from confluent_kafka import Consumer, Producer, TopicPartition
    config = librdkafka_config(secure_broker, case)
    topic = _topic("rdkafka")
    producer = Producer({**config, "message.timeout.ms": 20000})
    for i in range(5):
        producer.produce(topic, key=b"k", value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": "secure-" + topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 5 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            assert message.error() is None, message.error()
            got.append(message.value())
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(5)]


@pytest.mark.parametrize("case", ["ssl", "mtls", "sasl_plaintext-plain", "sasl_ssl-scram-256", "sasl_ssl-scram-512"])
def test_kafka_python(secure_broker, case):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    listener, mechanism, user, password = LOGINS[case]
    config = {"bootstrap_servers": secure_broker.address(listener), "security_protocol": PROTOCOL[listener],
              "ssl_cafile": secure_broker.certificates.ca}
    if listener == "MTLS":
        config.update(ssl_certfile=secure_broker.certificates.cert("alice"),
                      ssl_keyfile=secure_broker.certificates.key("alice"))
    if mechanism:
        config.update(sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    topic = _topic("kafka-python")
    producer = KafkaProducer(**config)
    for i in range(3):
        producer.send(topic, f"v{i}".encode(), partition=0).get(30)
    producer.close()
    consumer = KafkaConsumer(**config, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    got = [message.value for _, message in zip(range(3), consumer)]
    consumer.close()
    assert got == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize("case", ["ssl", "sasl_plaintext-plain", "sasl_ssl-scram-512"])
def test_aiokafka(secure_broker, case):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.helpers import create_ssl_context
    listener, mechanism, user, password = LOGINS[case]
    topic = _topic("aiokafka")

    async def run() -> list[bytes]:
        config: dict = {"bootstrap_servers": secure_broker.address(listener), "security_protocol": PROTOCOL[listener]}
        if PROTOCOL[listener] in ("SSL", "SASL_SSL"):
            config["ssl_context"] = create_ssl_context(cafile=secure_broker.certificates.ca)
        if mechanism:
            config.update(sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
        producer = AIOKafkaProducer(**config)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait(topic, f"v{i}".encode(), partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**config, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
            got: list[bytes] = []
            async with asyncio.timeout(20):
                while len(got) < 3:
                    batches = await consumer.getmany(timeout_ms=1000)
                    got += [message.value for messages in batches.values() for message in messages]
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == [b"v0", b"v1", b"v2"]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (scripts/setup.sh installs it)")
@pytest.mark.parametrize("case", ["mtls", "sasl_ssl-scram-256", "sasl_plaintext-plain"])
def test_kcat(secure_broker, case):
    config = librdkafka_config(secure_broker, case)
    broker = config.pop("bootstrap.servers")
    if "sasl.mechanism" in config:
        config["sasl.mechanisms"] = config.pop("sasl.mechanism")
    options = [argument for key, value in config.items() for argument in ("-X", f"{key}={value}")]
    topic = _topic("kcat")
    subprocess.run(["kcat", "-P", "-b", broker, "-t", topic, "-p", "0", *options], input=b"one\ntwo\n",
                   check=True, timeout=30)
    read = subprocess.run(["kcat", "-C", "-b", broker, "-t", topic, "-p", "0", "-o", "beginning", "-c", "2", "-e",
                           *options], capture_output=True, check=True, timeout=30)
    assert read.stdout.split() == [b"one", b"two"]


def gregor_config(broker, case: str) -> dict:
    listener, mechanism, user, password = LOGINS[case]
    config = {"bootstrap.servers": broker.address(listener), "security.protocol": PROTOCOL[listener],
              "ssl.truststore.type": "PEM", "ssl.truststore.location": broker.certificates.ca}
    if listener == "MTLS":
        config.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": broker.certificates.keystore("alice")})
    if mechanism == "PLAIN":
        config["sasl.jaas.config"] = (f'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                      f'username="{user}" password="{password}";')
    if mechanism == "OAUTHBEARER":
        config.update({"sasl.mechanism": mechanism, "sasl.jaas.config":
                       f'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                       f'unsecuredLoginStringClaim_sub="{user}";'})
    elif mechanism:
        config.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    return config


@pytest.mark.parametrize("case", ["ssl", "mtls", "sasl_plaintext-plain", "sasl_ssl-scram-256", "sasl_ssl-scram-512",
                                  "sasl_ssl-oauthbearer"])
def test_gregor_client(secure_broker, case):
    from gregor import Consumer, Producer
    config = gregor_config(secure_broker, case)
    topic = _topic("gregor")
    with Producer(config) as producer:
        for i in range(3):
            producer.send(topic, f"v{i}".encode(), partition=0).get(30)
    with Consumer(config, auto_offset_reset="earliest") as consumer:
        consumer.assign([(topic, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < 3 and time.monotonic() < deadline:
            got += [record.value for record in consumer.poll(0.5)]
    assert got == [b"v0", b"v1", b"v2"]


def test_a_large_fetch_over_tls_carries_the_file_data(secure_broker):
    """Fetches of 64 KB and more answer with file regions: sendfile on a plaintext listener, read
    and encrypted on a TLS one; both give the same records."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    topic = _topic("large-fetch")
    values = [bytes([i]) * 20_000 for i in range(40)]  # 800 KB
    producer = Producer({"bootstrap.servers": secure_broker.address("PLAINTEXT"), "linger.ms": 50})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    for case in ("ssl", "sasl_ssl-scram-512"):
        consumer = Consumer({**librdkafka_config(secure_broker, case), "group.id": "large-" + topic,
                             "enable.auto.commit": False, "fetch.min.bytes": 500_000, "fetch.wait.max.ms": 2000})
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < len(values) and time.monotonic() < deadline:
            got += [message.value() for message in consumer.consume(100, 0.5) if message.error() is None]
        consumer.close()
        assert got == values, case
