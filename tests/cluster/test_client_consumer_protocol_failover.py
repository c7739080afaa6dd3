"""Gregor's Consumer with group.protocol=consumer (KIP-848) on three brokers while the broker that
coordinates its group is killed -9: the members find the new coordinator (which replays the
group from `__consumer_offsets`), keep their partitions and go on, and every record is processed
with its offset committed."""

from __future__ import annotations

import pytest

from gregor.client import KafkaException
from gregor.coordinator.partitioning import partition_for
from tests.cluster.brokers import Cluster
from tests.cluster.test_consumer_protocol_failover import committed_total, produce, until_committed
from tests.interop.test_client_consumer_protocol import GregorMember
from tests.interop.test_groups import wait_until

pytestmark = pytest.mark.slow

GROUP, TOPIC = "failover-848", "events"  # the names the helpers of the librdkafka version use


def test_gregor_members_survive_the_kill_of_their_coordinator(tmp_path):
    cluster = Cluster(tmp_path, overrides={"group.consumer.heartbeat.interval.ms": "500",
                                           "group.consumer.min.heartbeat.interval.ms": "500",
                                           "group.consumer.min.session.timeout.ms": "10000",
                                           "group.consumer.session.timeout.ms": "10000"}).start()
    members: list[GregorMember] = []
    try:
        cluster.create_topic(TOPIC, 6)
        members = [GregorMember(cluster.bootstrap, GROUP, [TOPIC]) for _ in range(3)]

        def poll_and_commit() -> None:
            for member in members:
                before = len(member.records)
                member.poll()
                if len(member.records) > before:
                    try:
                        member.consumer.commit()
                    except KafkaException:  # a commit racing the coordinator's move is retried by the next one
                        pass

        wait_until(lambda: sorted(len(m.owned) for m in members) == [2, 2, 2], 60, "a balanced group",
                   poll_and_commit)
        produce(cluster.bootstrap, 0, 300)
        wait_until(lambda: committed_total(cluster.bootstrap) == 300, 60, "300 records committed",
                   poll_and_commit)
        owned = [set(m.owned) for m in members]
        coordinator = cluster.leader_of("__consumer_offsets", partition_for(GROUP, 6))
        cluster.brokers[coordinator].kill9()
        produce(cluster.bootstrap, 300, 300)
        until_committed(cluster.bootstrap, 600, poll_and_commit)
        assert [m.owned for m in members] == owned, "the coordinator's move changed the assignment"
        assert not any(m.listener.lost for m in members), "a member was fenced"
        processed = {record for member in members for record in member.records}
        assert {(i % 6, i // 6) for i in range(600)} <= processed
    finally:
        for member in members:
            member.consumer.close()
        cluster.stop()
