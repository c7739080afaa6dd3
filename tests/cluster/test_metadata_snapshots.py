"""Metadata snapshots across processes: a controller that snapshots after every change drops
the log prefix, and a broker that was down meanwhile catches up by fetching the snapshot
(FetchSnapshot) — it learns that a topic was deleted while it was away and deletes its replicas."""

from __future__ import annotations

import os
import time

import pytest

from tests.cluster.brokers import Cluster

pytestmark = pytest.mark.slow

EVERY_CHANGE = {"metadata.log.max.record.bytes.between.snapshots": "1"}


def test_a_broker_that_missed_the_log_prefix_catches_up_from_the_snapshot(tmp_path):
    cluster = Cluster(tmp_path, controller_overrides=EVERY_CHANGE).start()
    try:
        cluster.create_topic("old", 2)
        away = cluster.brokers[max(cluster.brokers)]
        deadline = time.monotonic() + 10  # create_topic returns once the topic is known, not once each broker made its logs
        while sorted(name for name in os.listdir(away.data_dir) if name.startswith("old-")) != ["old-0", "old-1"]:
            assert time.monotonic() < deadline, os.listdir(away.data_dir)
            time.sleep(0.1)
        away.kill9()
        admin = cluster.admin()
        admin.delete_topics(["old"], operation_timeout=30)["old"].result(40)
        cluster.create_topic("new", 2, replication_factor=2)
        metadata_dir = os.path.join(cluster.controllers[0].data_dir, "__cluster_metadata-0")
        assert any(name.endswith(".checkpoint") for name in os.listdir(metadata_dir))
        away.restart()
        cluster.wait_for_brokers(3)
        deadline = time.monotonic() + 30
        while any(name.startswith("old-") and not name.endswith("-delete") for name in os.listdir(away.data_dir)):
            assert time.monotonic() < deadline, os.listdir(away.data_dir)
            time.sleep(0.2)
        assert "installed snapshot" in away.output() or "loaded from snapshot" in away.output()
    finally:
        cluster.stop()
