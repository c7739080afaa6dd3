"""The controller's leader duties on a real cluster (one controller, three broker-only nodes):
ElectLeaders PREFERRED gives a restarted broker its leadership back, a partition reassigned from
brokers [a, b] to [b, c] keeps its data and its old replica deletes its copy, and with
auto.leader.rebalance.enable the controller moves leadership back by itself."""

from __future__ import annotations

import os
import time

import pytest

from tests.cluster.brokers import Cluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    nodes = Cluster(tmp_path_factory.mktemp("elect"))
    nodes.controllers[0].overrides.update({"auto.leader.rebalance.enable": "false"})
    nodes.start()
    yield nodes
    nodes.stop()


def bounce_preferred_leader(cluster: Cluster, topic: str) -> int:
    """Kill the preferred replica (and leader) of partition 0, restart it, wait until it is back
    in the ISR; another replica leads meanwhile. Returns the preferred replica."""
    leader, replicas, _ = cluster.wait_for_full_isr(topic)[0]
    preferred = replicas[0]
    assert leader == preferred
    cluster.brokers[preferred].kill9()
    cluster.wait_for(topic, lambda states: states[0][0] not in (-1, preferred))
    cluster.brokers[preferred].restart()
    cluster.wait_for_full_isr(topic)
    return preferred


def test_preferred_leader_election_moves_leadership_back(cluster):
    from confluent_kafka import ElectionType, TopicPartition
    cluster.create_topic("elect", 1)
    preferred = bounce_preferred_leader(cluster, "elect")
    assert cluster.leader_of("elect", 0) != preferred  # auto rebalance is off: nothing moves it back
    admin = cluster.admin()
    partition = TopicPartition("elect", 0)
    assert admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(30) == {partition: None}
    cluster.wait_for("elect", lambda states: states[0][0] == preferred, timeout=20)
    again = admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(30)
    assert again[partition].name() == "ELECTION_NOT_NEEDED"


def test_reassignment_moves_a_partition_to_new_brokers_with_its_data(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import NewTopic
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as Partition
    a, b, c = sorted(cluster.brokers)
    creating = cluster.admin()
    creating.create_topics([NewTopic("moved", 1, replica_assignment=[[a, b]])])["moved"].result(30)
    cluster.wait_for("moved", lambda states: states.get(0, (-1, [], []))[2] == [a, b])
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
    for value in range(200):
        producer.produce("moved", str(value).encode())
    assert producer.flush(30) == 0

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        assert admin.alter_partition_reassignments({Partition("moved", 0): [b, c]}) == {Partition("moved", 0): None}
        for value in range(200, 300):  # while the partition moves and its leader changes
            producer.produce("moved", str(value).encode())
        assert producer.flush(30) == 0
        states = cluster.wait_for("moved", lambda s: s[0][1] == [b, c] and sorted(s[0][2]) == [b, c], timeout=30)
        assert states[0][0] == b  # the leader was being removed: the first target replica took over
        assert admin.list_partition_reassignments() == {}
    finally:
        admin.close()
    old_copy = os.path.join(cluster.brokers[a].data_dir, "moved-0")
    deadline = time.monotonic() + 10
    while os.path.exists(old_copy) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(old_copy), "the broker reassigned away kept its replica"

    cluster.brokers[a].stop()  # what is read now comes from the new replicas
    try:
        # assigned, not subscribed: a group would need __consumer_offsets, whose three replicas
        # cannot all be placed while a is down
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "moved",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition("moved", 0, 0)])
        values: list[int] = []
        deadline = time.monotonic() + 30
        while len(values) < 300 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(int(message.value()))

        consumer.close()
        assert values == list(range(300))
    finally:
        cluster.brokers[a].restart()
        cluster.wait_for_brokers(3)


def test_auto_rebalance_moves_leadership_back_without_being_asked(cluster):
    controller = cluster.controllers[0]
    controller.stop()
    controller.overrides.update({"auto.leader.rebalance.enable": "true",
                                 "leader.imbalance.check.interval.seconds": "1"})
    controller.restart()
    cluster.wait_for_brokers(3)
    cluster.create_topic("balanced", 1)
    preferred = bounce_preferred_leader(cluster, "balanced")
    cluster.wait_for("balanced", lambda states: states[0][0] == preferred, timeout=20)
