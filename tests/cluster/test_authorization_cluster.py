"""A cluster with an authorizer: brokers and the controller talk to each other only while their
principal (User:ANONYMOUS until SASL lands) holds CLUSTER_ACTION on the cluster. Granted from the
brokers' address, followers replicate and the brokers heartbeat; denied, the controller closes
their connections and fences them. (The brokers' own metadata goes stale then, so the fencing is
read in the controller's log.)"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from tests.cluster.brokers import Cluster

pytestmark = pytest.mark.slow

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}


def _cluster_acl(operation: AclOperation, permission: AclPermissionType) -> AclBinding:
    return AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:ANONYMOUS", "127.0.0.1",
                      operation, permission)


def test_brokers_need_cluster_action_to_replicate_and_to_stay_in_the_cluster(tmp_path):
    cluster = Cluster(tmp_path, brokers=2, overrides=AUTHORIZER, controller_overrides=AUTHORIZER).start()
    try:
        admin = cluster.admin()
        grants = [_cluster_acl(op, AclPermissionType.ALLOW) for op in (
            AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE, AclOperation.ALTER, AclOperation.CREATE)]
        for future in admin.create_acls(grants).values():
            future.result(30)
        cluster.create_topic("guarded", 1, replication_factor=2)  # waits for both replicas in the ISR
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        delivered: list[object] = []
        producer.produce("guarded", b"v", on_delivery=lambda error, _msg: delivered.append(error))
        producer.flush(30)
        assert delivered == [None]

        for future in admin.create_acls([_cluster_acl(AclOperation.CLUSTER_ACTION,
                                                      AclPermissionType.DENY)]).values():
            future.result(30)
        # the brokers' heartbeats (and metadata fetches) are refused: the controller fences them
        controller = cluster.controllers[0]
        deadline = time.monotonic() + 30
        while _log(controller).count("missed its session") < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        log = _log(controller)
        assert log.count("missed its session") == 2, "the brokers were not fenced"
        assert "User:ANONYMOUS may not use the controller listener (CLUSTER_ACTION" in log
    finally:
        cluster.stop()


def _log(node) -> str:
    with open(node.log_path, encoding="utf-8", errors="replace") as file:
        return file.read()
