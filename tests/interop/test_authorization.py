"""ACLs end to end with real clients: until authentication lands every connection is
`User:ANONYMOUS`, so the ACLs here allow or deny ANONYMOUS. The broker runs Kafka's
`StandardAuthorizer` with `allow.everyone.if.no.acl.found=true`, so the cluster (which has no
ACL) stays open to the admin calls, while each topic with an ACL is decided by it."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys

import pytest

pytestmark = pytest.mark.interop

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ANONYMOUS = "User:ANONYMOUS"


def _produce(bootstrap: str, topic: str) -> str | None:
    """The error librdkafka reports for one record, None when it was written."""
    from confluent_kafka import Producer
    outcome: list[object] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000, "retries": 0})
    producer.produce(topic, b"v", on_delivery=lambda error, _msg: outcome.append(error))
    producer.flush(15)
    return None if outcome[0] is None else outcome[0].name()


def _gregor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gregor.cli.main", *args], capture_output=True, text=True,
                          timeout=60)


def test_acls_decide_for_real_clients_allow_prefixed_deny_over_allow(broker_factory):
    from confluent_kafka.admin import (
        AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType,
        ResourceType,
    )
    broker = broker_factory({**AUTHORIZER, "allow.everyone.if.no.acl.found": "true"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topics = ["open", "secret", "pre-a", "denied"]
    for future in admin.create_topics([NewTopic(name, 1, 1) for name in topics]).values():
        future.result(30)
    literal, prefixed = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
    bindings = [
        AclBinding(ResourceType.TOPIC, "secret", literal, "User:alice", "*", AclOperation.ALL, allow),
        AclBinding(ResourceType.TOPIC, "pre-", prefixed, ANONYMOUS, "*", AclOperation.WRITE, allow),
        AclBinding(ResourceType.TOPIC, "denied", literal, ANONYMOUS, "*", AclOperation.ALL, allow),
        AclBinding(ResourceType.TOPIC, "denied", literal, ANONYMOUS, "*", AclOperation.WRITE, deny),
    ]
    for future in admin.create_acls(bindings).values():
        future.result(30)

    assert _produce(broker.bootstrap, "open") is None  # no ACL: allow.everyone.if.no.acl.found
    assert _produce(broker.bootstrap, "pre-a") is None  # the prefixed ALLOW
    assert _produce(broker.bootstrap, "secret") == "TOPIC_AUTHORIZATION_FAILED"  # ACLs for others only
    assert _produce(broker.bootstrap, "denied") == "TOPIC_AUTHORIZATION_FAILED"  # DENY beats ALLOW

    listed = set(admin.list_topics(timeout=10).topics)
    assert {"open", "pre-a", "denied"} <= listed and "secret" not in listed  # Metadata hides what ANONYMOUS may not describe
    kcat = subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", "secret", "-X", "message.timeout.ms=5000"],
                          input=b"v\n", capture_output=True, timeout=60)
    assert b"Delivery failed for message: Broker: Topic authorization failed" in kcat.stderr, kcat.stderr

    applying = admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, "denied", ResourcePatternType.MATCH, None,
                                                    None, AclOperation.ANY, AclPermissionType.ANY)).result(30)
    assert sorted((b.operation, b.permission_type) for b in applying) == sorted(
        [(AclOperation.ALL, allow), (AclOperation.WRITE, deny)])

    # kafka-acls.sh's --remove, with Gregor's tool: the DENY goes, the write is allowed again
    removed = _gregor("acls", "--bootstrap-server", broker.bootstrap, "--remove", "--deny-principal", ANONYMOUS,
                      "--operation", "Write", "--topic", "denied", "--force")
    assert removed.returncode == 0, removed.stderr
    assert "operation=ALL, permissionType=ALLOW" in removed.stdout and "DENY" not in removed.stdout
    assert _produce(broker.bootstrap, "denied") is None

    # a consumer group ANONYMOUS may not READ: librdkafka reports GROUP_AUTHORIZATION_FAILED
    for future in admin.create_acls([AclBinding(ResourceType.GROUP, "blocked", literal, ANONYMOUS, "*",
                                                AclOperation.READ, deny)]).values():
        future.result(30)
    assert _consume_error(broker.bootstrap, "blocked", "open") == "GROUP_AUTHORIZATION_FAILED"

    # a plain client cannot fetch as a follower (CVE-2018-1288) once the cluster's CLUSTER_ACTION is
    # given to the brokers only (while the cluster has no ACL, allow.everyone.if.no.acl.found opens it)
    assert _follower_fetch_error(broker.port, "open") != 29
    admin_rights = _gregor("acls", "--bootstrap-server", broker.bootstrap, "--add", "--allow-principal", ANONYMOUS,
                           "--operation", "Describe", "--operation", "Alter", "--cluster")
    assert admin_rights.returncode == 0, admin_rights.stderr
    added = _gregor("acls", "--bootstrap-server", broker.bootstrap, "--add", "--allow-principal", "User:broker",
                    "--operation", "ClusterAction", "--cluster")
    assert added.returncode == 0, added.stderr
    assert "ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)" in added.stdout
    assert "(principal=User:broker, host=*, operation=CLUSTER_ACTION, permissionType=ALLOW)" in added.stdout
    assert _follower_fetch_error(broker.port, "open") == 29  # TOPIC_AUTHORIZATION_FAILED


def _consume_error(bootstrap: str, group: str, topic: str) -> str | None:
    """The first error librdkafka's consumer reports, None when it reads a record."""
    import time

    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                return message.error().name() if message.error() else None
        return "nothing within 20 s"
    finally:
        consumer.close()


def _follower_fetch_error(port: int, topic: str) -> int:
    from gregor.protocol.headers import encode_request
    from gregor.protocol.messages import FetchRequest, FetchResponse
    from gregor.protocol.primitives import Reader
    request = FetchRequest(replica_id=1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(encode_request(1, "follower", request, 4))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = sock.recv(size, socket.MSG_WAITALL)
    response = FetchResponse.decode(Reader(memoryview(frame), 4), 4)
    return response.responses[0].partitions[0].error_code


def test_a_super_user_is_allowed_even_against_a_deny(broker_factory):
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, NewTopic, ResourcePattern,
        ResourcePatternFilter, ResourceType,
    )
    broker = broker_factory({**AUTHORIZER, "super.users": f"User:admin;{ANONYMOUS}"})
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic("guarded", 1, 1)])
        deny_all = ACL(ANONYMOUS, "*", ACLOperation.ALL, ACLPermissionType.DENY,
                       ResourcePattern(ResourceType.TOPIC, "guarded"))
        created = admin.create_acls([deny_all])
        assert not created["failed"], created
        assert _produce(broker.bootstrap, "guarded") is None  # a super user is allowed even against a DENY
        listed = admin.describe_acls(ACLFilter(ANONYMOUS, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                               ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
        assert [acl.permission_type for acl in listed[0]] == [ACLPermissionType.DENY]
    finally:
        admin.close()
