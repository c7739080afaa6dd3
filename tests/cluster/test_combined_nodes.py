"""Three `process.roles=broker,controller` nodes — Kafka's combined mode, each one voter of the
quorum and one broker: they elect a controller among themselves, host a replication-factor-3
topic, and keep every acknowledged record when the node that is both the active controller and a
partition leader is killed (-9) and restarted."""

from __future__ import annotations

import os
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess, free_port
from tests.cluster.brokers import FAST_FAILOVER
from tests.cluster.quorum import CLUSTER_ID, leader_view

pytestmark = pytest.mark.slow


@pytest.fixture
def nodes(tmp_path):
    controller_ports = [free_port() for _ in range(3)]
    voters = ",".join(f"{i}@127.0.0.1:{port}" for i, port in enumerate(controller_ports, 1))
    processes = []
    for node_id, controller_port in enumerate(controller_ports, 1):
        os.makedirs(tmp_path / f"node{node_id}")
        node = BrokerProcess(str(tmp_path / f"node{node_id}" / "data"))
        node.overrides = {"process.roles": "broker,controller", "node.id": str(node_id), "cluster.id": CLUSTER_ID,
                          "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{controller_port}",
                          "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
                          "broker.session.timeout.ms": "1500", "default.replication.factor": "3",
                          "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
                          "min.insync.replicas": "2", **FAST_FAILOVER}
        node.controller_port = controller_port
        processes.append(node)
    threads = [threading.Thread(target=node.start) for node in processes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    yield processes
    for node in processes:
        node.stop()


class ControllerPorts:
    """leader_view() reads DescribeQuorum from each node's controller listener."""

    def __init__(self, node: BrokerProcess) -> None:
        self.port = node.controller_port
        self.proc = node.proc


def test_combined_nodes_survive_the_loss_of_the_active_controller(nodes):
    bootstrap = ",".join(node.bootstrap for node in nodes)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while len(admin.list_topics(timeout=10).brokers) < 3:
        assert time.monotonic() < deadline, "the brokers were not all unfenced"
        time.sleep(0.2)
    admin.create_topics([NewTopic("ledger", 1, 3)], operation_timeout=30)["ledger"].result(40)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for value in range(200):
        producer.produce("ledger", str(value).encode())
    assert producer.flush(60) == 0
    index, _ = leader_view([ControllerPorts(node) for node in nodes])
    nodes[index].kill9()
    for value in range(200, 400):
        producer.produce("ledger", str(value).encode())
    assert producer.flush(90) == 0
    nodes[index].restart()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "audit", "auto.offset.reset": "earliest"})
    consumer.subscribe(["ledger"])
    values: list[int] = []
    deadline = time.monotonic() + 60
    while len(values) < 400 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            values.append(int(message.value()))
    consumer.close()
    assert values == list(range(400))
