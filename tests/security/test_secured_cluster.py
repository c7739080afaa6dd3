"""A cluster whose every link is secured: a controller and two broker-only nodes, the controller
listener SASL_SSL with PLAIN (brokers register, heartbeat and copy the metadata log over it) and
the inter-broker listener SASL_SSL (followers fetch over it, the transaction coordinator sends
markers and verifications over it); clients log in with SCRAM or PLAIN."""

from __future__ import annotations

import os
import socket
import ssl
import time

import pytest

from tests.broker_process import BrokerProcess, free_port
from tests.cluster.quorum import CLUSTER_ID

pytestmark = [pytest.mark.interop, pytest.mark.slow]


def _tls_ready(ca: str):
    def ready(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as raw:
                with ssl.create_default_context(cafile=ca).wrap_socket(raw, server_hostname="127.0.0.1"):
                    return True
        except OSError:
            return False
    return ready


def _jaas(user: str, users: dict[str, str]) -> str:
    entries = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    return (f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" '
            f'password="{users[user]}" {entries};')


@pytest.fixture
def secured_cluster(tmp_path, certificates):
    controller_port = free_port()
    tls = {"ssl.keystore.type": "PEM", "ssl.keystore.location": certificates.keystore("broker"),
           "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca}
    common = {"cluster.id": CLUSTER_ID, "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
              "controller.listener.names": "CONTROLLER",
              "listener.security.protocol.map": "BROKER:SASL_SSL,CONTROLLER:SASL_SSL",
              "sasl.mechanism.controller.protocol": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
              "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
              "listener.name.controller.plain.sasl.jaas.config": _jaas("node", {"node": "node-secret"}),
              "broker.heartbeat.interval.ms": "300", **tls}
    ready = _tls_ready(certificates.ca)
    controller = BrokerProcess(str(tmp_path / "controller" / "data"), ready=ready)
    controller.port = controller_port
    controller.overrides = {**common, "process.roles": "controller", "node.id": "1",
                            "listeners": f"CONTROLLER://127.0.0.1:{controller_port}"}
    brokers = []
    for node_id in (2, 3):
        broker = BrokerProcess(str(tmp_path / f"broker{node_id}" / "data"), ready=ready)
        broker.overrides = {**common, "process.roles": "broker", "node.id": str(node_id),
                            "listeners": f"BROKER://127.0.0.1:{broker.port}", "inter.broker.listener.name": "BROKER",
                            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                            "listener.name.broker.plain.sasl.jaas.config":
                                _jaas("node", {"node": "node-secret", "alice": "alice-secret"}),
                            "default.replication.factor": "2", "offsets.topic.replication.factor": "2",
                            "offsets.topic.num.partitions": "2", "transaction.state.log.replication.factor": "2",
                            "transaction.state.log.num.partitions": "2"}
        brokers.append(broker)
    os.makedirs(tmp_path / "controller", exist_ok=True)
    for node in (controller, *brokers):
        os.makedirs(os.path.dirname(node.data_dir), exist_ok=True)
        node.start()
    try:
        yield brokers
    finally:
        for node in (*brokers, controller):
            node.stop()


def test_replication_and_metadata_over_secured_links(secured_cluster, certificates):
    from gregor import AdminClient, Producer
    from gregor.client.admin import NewTopic
    from gregor.client.scram_credentials import UserScramCredentialUpsertion
    bootstrap = ",".join(f"127.0.0.1:{broker.port}" for broker in secured_cluster)
    tls = {"security.protocol": "SASL_SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca}
    alice = {"bootstrap.servers": bootstrap, **tls, "sasl.mechanism": "PLAIN", "sasl.username": "alice",
             "sasl.password": "alice-secret"}
    with AdminClient(alice) as admin:
        deadline = time.monotonic() + 30
        while len(admin.describe_cluster().nodes) < 2:  # both registered through the secured controller listener
            assert time.monotonic() < deadline, "the brokers did not both register"
            time.sleep(0.2)
        assert admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("zoe", "SCRAM-SHA-256", "zoe-secret")]) == {"zoe": None}
        assert not isinstance(admin.create_topics([NewTopic("secured", 1, 2)])["secured"], Exception)
    zoe = {"bootstrap.servers": bootstrap, **tls, "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "zoe",
           "sasl.password": "zoe-secret"}
    deadline = time.monotonic() + 30
    while True:  # both brokers copy zoe's credential from the metadata log, over the controller listener
        try:
            with Producer({**zoe, "acks": "all", "max.block.ms": 3000}) as producer:
                for i in range(10):
                    producer.send("secured", f"v{i}".encode()).get(30)  # acks=all: the follower fetched it
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    with AdminClient(zoe) as admin:
        partition = admin.describe_topics(["secured"])["secured"].partitions[0]
    assert sorted(partition.isr) == [2, 3]


def test_transactions_whose_markers_cross_secured_links(secured_cluster, certificates):
    """A transaction over both brokers' partitions: the coordinator, on one of them, verifies the
    other's writes and sends it markers over the SASL_SSL inter-broker listener (they went out
    in plaintext, and failed, before)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    bootstrap = ",".join(f"127.0.0.1:{broker.port}" for broker in secured_cluster)
    alice = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": certificates.ca,
             "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    admin = AdminClient(alice)
    deadline = time.monotonic() + 30
    while len(admin.list_topics(timeout=10).brokers) < 2:
        assert time.monotonic() < deadline, "the brokers did not both register"
        time.sleep(0.2)
    admin.create_topics([NewTopic("txn-secured", 2, 2)])["txn-secured"].result(30)
    leaders = {p.leader for p in admin.list_topics("txn-secured", timeout=10).topics["txn-secured"].partitions.values()}
    assert leaders == {2, 3}, "one partition led by each broker, so one of them is not the coordinator"
    producer = Producer({**alice, "transactional.id": "secured-copier", "transaction.timeout.ms": 30000})
    producer.init_transactions(60)
    for commit in (False, True):
        producer.begin_transaction()
        for index in range(10):
            producer.produce("txn-secured", b"committed" if commit else b"aborted", partition=index % 2)
        (producer.commit_transaction if commit else producer.abort_transaction)(60)
    consumer = Consumer({**alice, "group.id": "secured-reader", "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("txn-secured", 0, 0), TopicPartition("txn-secured", 1, 0)])
    values = []
    deadline = time.monotonic() + 30
    while len(values) < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [b"committed"] * 10
