"""`gregor cluster start --secure`: three brokers and a controller on SASL_SSL with generated
certificates; confluent-kafka, configured from the librdkafka.properties the tool writes,
produces and consumes, the replicas stay in sync (followers fetch as the SCRAM user `broker`),
and nothing but the `client` login is needed."""

from __future__ import annotations

import os
import stat
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cli.test_cluster_start import alive, started  # noqa: F401  (started is a fixture)


def _properties(path: str) -> dict[str, str]:
    with open(path, encoding="utf-8") as handle:
        return dict(line.rstrip("\n").split("=", 1) for line in handle if "=" in line)


@pytest.mark.slow
def test_a_secure_cluster_serves_the_client_config_it_writes(tmp_path, started):  # noqa: F811
    directory = str(tmp_path / "secure")
    tool = started("--dir", directory, "--base-port", "0", "--brokers", "3", "--secure")
    bootstrap = tool.wait_for("Bootstrap servers:").split(": ", 1)[1]
    config = _properties(os.path.join(directory, "librdkafka.properties"))
    assert config["bootstrap.servers"] == bootstrap and config["security.protocol"] == "SASL_SSL"
    java = _properties(os.path.join(directory, "client.properties"))
    assert java["sasl.mechanism"] == "SCRAM-SHA-512" and "ScramLoginModule" in java["sasl.jaas.config"]
    assert stat.S_IMODE(os.stat(os.path.join(directory, "client.properties")).st_mode) == 0o600
    with pytest.raises(Exception):  # the listeners are not plaintext
        AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 2000}).list_topics(timeout=3)

    topic = f"secure-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(config)
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    producer = Producer({**config, "acks": "all"})
    for i in range(10):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0  # acks=all: every replica fetched them over SASL_SSL as `broker`

    consumer = Consumer({**config, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [f"v{i}".encode() for i in range(10)]
    partition = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    assert len(partition.isrs) == 3

    assert tool.stop() == 0, tool.proc.stderr.read()
    assert [pid for pid in tool.pids if alive(pid)] == []
