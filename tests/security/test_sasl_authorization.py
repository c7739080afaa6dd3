"""The principal a SASL login sets is the one the authorizer checks: a super user changes SCRAM
credentials and creates topics, another user is refused both (CLUSTER_AUTHORIZATION_FAILED for
the SCRAM APIs, which need ALTER / DESCRIBE on the cluster, as in Kafka)."""

from __future__ import annotations

import os

import pytest

from tests.broker_process import BrokerProcess, free_port

pytestmark = pytest.mark.interop

USERS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_bob="bob-secret";'


@pytest.fixture(scope="module")
def authorizing_broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("authorizing-broker")
    process = BrokerProcess(os.path.join(str(base), "data"))
    sasl_port = free_port()
    process.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{process.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": USERS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin"})
    process.start()
    try:
        yield f"127.0.0.1:{sasl_port}"
    finally:
        process.stop()


def _admin(bootstrap: str, user: str):
    from gregor import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"})


def test_the_sasl_principal_is_what_the_authorizer_checks(authorizing_broker):
    from gregor.client.admin import NewTopic
    from gregor.client.errors import KafkaException
    from gregor.client.scram_credentials import UserScramCredentialUpsertion
    carol = [UserScramCredentialUpsertion("carol", "SCRAM-SHA-256", "carol-secret")]
    with _admin(authorizing_broker, "admin") as admin:
        assert admin.alter_user_scram_credentials(carol) == {"carol": None}
        assert [info.mechanism for info in admin.describe_user_scram_credentials(["carol"])["carol"]] == [
            "SCRAM-SHA-256"]
        assert not isinstance(admin.create_topics([NewTopic("admins-topic", 1, 1)])["admins-topic"], Exception)
    with _admin(authorizing_broker, "bob") as bob:
        refused = bob.alter_user_scram_credentials(carol)["carol"]
        assert isinstance(refused, KafkaException) and refused.name == "CLUSTER_AUTHORIZATION_FAILED"
        with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
            bob.describe_user_scram_credentials()
        created = bob.create_topics([NewTopic("bobs-topic", 1, 1)])["bobs-topic"]
        assert isinstance(created, KafkaException) and created.name == "TOPIC_AUTHORIZATION_FAILED"


def _librdkafka_admin(bootstrap: str, user: str):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"})


def test_authorized_operations_are_the_acls_granted(authorizing_broker):
    """librdkafka decodes the bit fields of DescribeCluster, Metadata and DescribeGroups: bob gets
    what his ACLs grant (with Kafka's implied DESCRIBE and DESCRIBE_CONFIGS), the super user
    every operation Kafka supports on the resource type."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import (
        AclBinding, AclOperation, AclPermissionType, NewTopic, ResourcePatternType, ResourceType,
    )
    admin = _librdkafka_admin(authorizing_broker, "admin")
    admin.create_topics([NewTopic("ops-topic", 1, 1)])["ops-topic"].result(30)
    grants = [(ResourceType.TOPIC, "ops-topic", AclOperation.READ), (ResourceType.TOPIC, "ops-topic",
                                                                     AclOperation.ALTER_CONFIGS),
              (ResourceType.GROUP, "ops-group", AclOperation.READ), (ResourceType.BROKER, "kafka-cluster",
                                                                     AclOperation.DESCRIBE),
              (ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE)]
    for future in admin.create_acls([AclBinding(kind, name, ResourcePatternType.LITERAL, "User:bob", "*", operation,
                                                AclPermissionType.ALLOW) for kind, name, operation in grants]).values():
        future.result(30)

    def operations(client) -> tuple[set, set, set]:
        cluster = client.describe_cluster(include_authorized_operations=True).result(30)
        topic = client.describe_topics(TopicCollection(["ops-topic"]),
                                       include_authorized_operations=True)["ops-topic"].result(30)
        group = client.describe_consumer_groups(["ops-group"], include_authorized_operations=True)["ops-group"]
        return (set(cluster.authorized_operations), set(topic.authorized_operations),
                set(group.result(30).authorized_operations))

    O = AclOperation
    assert operations(_librdkafka_admin(authorizing_broker, "bob")) == (
        {O.DESCRIBE, O.IDEMPOTENT_WRITE},
        {O.READ, O.DESCRIBE, O.ALTER_CONFIGS, O.DESCRIBE_CONFIGS},
        {O.READ, O.DESCRIBE})
    assert operations(admin) == (
        {O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE, O.ALTER, O.DESCRIBE},
        {O.READ, O.WRITE, O.CREATE, O.DESCRIBE, O.DELETE, O.ALTER, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS},
        {O.READ, O.DESCRIBE, O.DELETE})
