"""SCRAM credentials through Gregor's tools and admin client: `gregor configs --entity-type users`
over a SASL_SSL listener with `--command-config`, then a login with the new credential."""

from __future__ import annotations

import pytest

from gregor.cli.main import main
from tests.security.test_secure_clients import gregor_config

pytestmark = pytest.mark.interop


def _command_config(broker, tmp_path) -> str:
    path = tmp_path / "admin.properties"
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    "username=\"carol\" password=\"carol-secret\";\n"
                    f"ssl.truststore.type=PEM\nssl.truststore.location={broker.certificates.ca}\n")
    return str(path)


def test_configs_sets_describes_and_deletes_a_users_credentials(secure_broker, tmp_path, capsys):
    from gregor import AdminClient, Producer
    from gregor.client.errors import KafkaException
    connection = ["--bootstrap-server", secure_broker.address("SASL_SSL"),
                  "--command-config", _command_config(secure_broker, tmp_path)]
    assert main(["configs", *connection, "--alter", "--entity-type", "users", "--entity-name", "erin",
                 "--add-config", "SCRAM-SHA-256=[iterations=8192,password=erin-secret],"
                                 "SCRAM-SHA-512=[password=erin-secret]"]) == 0
    assert main(["configs", *connection, "--describe", "--entity-type", "users", "--entity-name", "erin"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Completed updating config for user-principal 'erin'.",
        "SCRAM credential configs for user-principal 'erin' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096"]
    erin = {**gregor_config(secure_broker, "sasl_ssl-scram-256"), "sasl.username": "erin",
            "sasl.password": "erin-secret"}
    with Producer(erin) as producer:
        assert producer.partitions_for("erin-was-here")

    assert main(["configs", *connection, "--alter", "--entity-type", "users", "--entity-name", "erin",
                 "--delete-config", "SCRAM-SHA-256"]) == 0
    with AdminClient({**gregor_config(secure_broker, "sasl_ssl-scram-512")}) as admin:
        described = admin.describe_user_scram_credentials(["erin", "nobody"])
    assert [(info.mechanism, info.iterations) for info in described["erin"]] == [("SCRAM-SHA-512", 4096)]
    assert isinstance(described["nobody"], KafkaException) and described["nobody"].name == "RESOURCE_NOT_FOUND"
    with Producer({**erin, "max.block.ms": 2000}) as producer:
        with pytest.raises(KafkaException):
            producer.partitions_for("erin-was-here")


def test_refused_changes_are_one_line(secure_broker, tmp_path, capsys):
    connection = ["--bootstrap-server", secure_broker.address("PLAINTEXT")]
    assert main(["configs", *connection, "--alter", "--entity-type", "users", "--entity-name", "frank",
                 "--add-config", "SCRAM-SHA-256=[iterations=10,password=x]"]) == 1
    assert main(["configs", *connection, "--alter", "--entity-type", "users", "--entity-name", "frank",
                 "--add-config", "SCRAM-SHA-1=[password=x]"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert errors == [
        "gregor configs: error: cannot update the SCRAM credentials of user frank: UNACCEPTABLE_CREDENTIAL: "
        "Too few iterations",
        "gregor configs: error: --add-config: SCRAM-SHA-1 is not a SCRAM mechanism Gregor serves (SCRAM-SHA-256 or "
        "SCRAM-SHA-512)"]


def test_describe_configs_hides_passwords(secure_broker):
    from gregor import AdminClient
    from gregor.client.admin import ConfigResource, ResourceType
    resource = ConfigResource(ResourceType.BROKER, "1")
    with AdminClient({"bootstrap.servers": secure_broker.address("PLAINTEXT")}) as admin:
        entries = admin.describe_configs([resource])[resource]
    password = entries["ssl.truststore.password"]
    assert password.is_sensitive and password.value is None
    location = entries["ssl.truststore.location"]
    assert not location.is_sensitive and location.value == secure_broker.certificates.ca


def test_a_users_quotas_and_credentials_in_one_command(secure_broker, capsys):
    connection = ["--bootstrap-server", secure_broker.address("PLAINTEXT")]
    assert main(["configs", *connection, "--alter", "--entity-type", "users", "--entity-name", "gina",
                 "--add-config", "producer_byte_rate=1048576,SCRAM-SHA-512=[password=gina-secret]"]) == 0
    assert main(["configs", *connection, "--describe", "--entity-type", "users", "--entity-name", "gina"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Completed updating config for user-principal 'gina'.",
        "Quota configs for user-principal 'gina' are producer_byte_rate=1048576.0",
        "SCRAM credential configs for user-principal 'gina' are SCRAM-SHA-512=iterations=4096"]
