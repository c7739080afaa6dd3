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
