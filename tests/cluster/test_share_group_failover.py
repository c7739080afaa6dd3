"""A share group survives its coordinator killed with -9: the next leader of the group's
`__consumer_offsets` partition replays the group's records, so the group keeps its epoch and its
member (a confluent-kafka ShareConsumer) carries on. Without the records the new coordinator
would start the group afresh at epoch 1 when the member rejoins."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import ShareConsumer

from gregor.client import AdminClient
from gregor.coordinator.partitioning import partition_for
from tests.cluster.brokers import Cluster
from tests.share_close import close_share_consumer

pytestmark = pytest.mark.slow

SETTINGS = {"group.share.heartbeat.interval.ms": "300", "group.share.session.timeout.ms": "10000"}
OFFSETS_PARTITIONS = 6  # the Cluster helper's offsets.topic.num.partitions


def _described(admin: AdminClient, member: ShareConsumer, ready, timeout: float = 60):
    """Poll the member (it heartbeats) until the group's description satisfies `ready`."""
    deadline = time.monotonic() + timeout
    while True:
        member.poll(0.2)
        found = admin.describe_share_groups(["crew"])["crew"]
        if not isinstance(found, Exception) and ready(found):
            return found
        assert time.monotonic() < deadline, found


def test_a_share_group_keeps_its_epoch_and_member_when_its_coordinator_is_killed(tmp_path):
    cluster = Cluster(tmp_path, brokers=3, overrides=SETTINGS).start()
    admin = None
    try:
        cluster.create_topic("jobs", 1, 3)
        member = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": "crew"})
        member.subscribe(["jobs"])
        passing = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": "crew"})
        passing.subscribe(["jobs"])
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        try:
            _described(admin, member, lambda g: len(g.members) == 2)
            close_share_consumer(passing)  # a join and a leave move the group epoch past what a fresh group would have
            before = _described(admin, member, lambda g: len(g.members) == 1 and g.members[0].assignment)
            assert before.group_epoch >= 3, before
            index = partition_for("crew", OFFSETS_PARTITIONS)
            cluster.wait_for_full_isr("__consumer_offsets")
            coordinator = cluster.leader_of("__consumer_offsets", index)
            cluster.brokers[coordinator].kill9()
            cluster.wait_for("__consumer_offsets", lambda s: s.get(index, (-1,))[0] not in (-1, coordinator))
            after = _described(admin, member, lambda g: g.coordinator is not None
                               and g.coordinator.node_id != coordinator and g.members)
            assert after.group_epoch >= before.group_epoch, (before, after)
            assert [m.member_id for m in after.members] == [m.member_id for m in before.members]
            assert after.members[0].assignment == [("jobs", 0)]
        finally:
            close_share_consumer(member)
    finally:
        if admin is not None:
            admin.close()
        cluster.stop()
