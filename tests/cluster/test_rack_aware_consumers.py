"""librdkafka members with `client.rack` (group.protocol=consumer) on brokers with `broker.rack`:
the coordinator gives each member the partitions whose replica is on its rack."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer

from tests.cluster.brokers import Cluster

pytestmark = pytest.mark.slow

TOPIC, GROUP = "racked", "rack-group"
SETTINGS = {"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
            "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "1"}


def test_members_get_the_partitions_on_their_racks(tmp_path):
    cluster = Cluster(tmp_path, brokers=2, overrides=SETTINGS)
    racks = {node_id: f"rack-{node_id}" for node_id in cluster.brokers}
    for node_id, node in cluster.brokers.items():
        node.overrides["broker.rack"] = racks[node_id]
    cluster.start()
    members: dict[str, Consumer] = {}
    try:
        cluster.create_topic(TOPIC, 6, replication_factor=1)
        expected = {rack: set() for rack in racks.values()}
        for partition, (leader, _, _) in cluster.partitions(TOPIC).items():
            expected[racks[leader]].add(partition)
        assert all(len(partitions) == 3 for partitions in expected.values()), expected
        owned: dict[str, set[int]] = {}
        for rack in sorted(expected):
            members[rack] = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP,
                                      "group.protocol": "consumer", "client.rack": rack,
                                      "enable.auto.commit": False})
            members[rack].subscribe([TOPIC])
        deadline = time.monotonic() + 60
        while owned != expected:
            assert time.monotonic() < deadline, f"assignments {owned}, expected {expected}"
            for rack, member in members.items():
                member.poll(0.1)
                owned[rack] = {p.partition for p in member.assignment()}
    finally:
        for member in members.values():
            member.close()
        cluster.stop()
