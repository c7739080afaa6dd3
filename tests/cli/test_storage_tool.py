"""`gregor storage` as kafka-storage.sh: `format` writes meta.properties and bootstrap.checkpoint and
a server started on the formatted directory bootstraps from them (cluster id, feature levels, SCRAM
credentials); `info`, `random-uuid`; bad input is one line and exit 1."""

from __future__ import annotations

import base64
import re

import pytest

from gregor.cli.scram_argument import ScramArgumentError, parse_scram
from gregor.client import AdminClient
from gregor.controller.bootstrap_metadata import BootstrapError, bootstrap_records
from gregor.protocol.scram import new_credential
from tests.broker_process import BrokerProcess
from tests.cli.conftest import in_process, one_error_line

CLUSTER_ID = "PaZFNJgdETB7nZpIuegszg"


def _properties(tmp_path, data_dir) -> str:
    path = tmp_path / "server.properties"
    path.write_text(f"node.id=1\nlog.dirs={data_dir}\n")
    return str(path)


def test_a_formatted_node_bootstraps_its_cluster_id_features_and_scram_users(capsys, tmp_path):
    data = tmp_path / "data"
    config = _properties(tmp_path, data)
    formatted = in_process(capsys, "storage", "format", "-t", CLUSTER_ID, "-c", config, "--feature",
                           "transaction.version=1", "--feature", "share.version=0",
                           "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
                           "-S", 'SCRAM-SHA-512=[name=bob,iterations=8192,password="bob-secret"]')
    assert (formatted.returncode, formatted.stdout) == (
        0, f"Formatting metadata directory {data} with metadata.version 3.9-IV0.\n")
    assert sorted(p.name for p in data.iterdir()) == ["bootstrap.checkpoint", "meta.properties"]
    again = in_process(capsys, "storage", "format", "-t", CLUSTER_ID, "-c", config)
    assert (again.returncode, one_error_line(again)) == (
        1, f"gregor storage: error: Log directory {data} is already formatted. Use --ignore-formatted to ignore "
           "this directory and format the others.")
    info = in_process(capsys, "storage", "info", "-c", config)
    assert info.returncode == 0
    assert f"Found metadata: {{cluster.id={CLUSTER_ID}, node.id=1, version=1}}" in info.stdout
    process = BrokerProcess(str(data))
    process.start()
    try:
        with AdminClient({"bootstrap.servers": process.bootstrap}) as admin:
            assert admin.describe_cluster(timeout=10).cluster_id == CLUSTER_ID
            finalized = admin.describe_features(timeout=10).finalized_features
            assert finalized == {"metadata.version": 21, "group.version": 1, "transaction.version": 1}
            users = admin.describe_user_scram_credentials(timeout=10)
            assert {user: [(c.mechanism, c.iterations) for c in creds] for user, creds in users.items()} == {
                "alice": [("SCRAM-SHA-256", 4096)], "bob": [("SCRAM-SHA-512", 8192)]}
    finally:
        process.stop()


@pytest.mark.parametrize("args, message", [
    (["-t", "not-a-uuid"], "Cluster ID string not-a-uuid does not appear to be a valid UUID: it must be 22 "
                           "characters of url-safe base64 (16 bytes), as random-uuid prints"),
    (["--release-version", "3.0", "--feature", "transaction.version=2"],
     "transaction.version could not be set to 2 because it depends on metadata.version=7 (3.3-IV3)"),
    (["--release-version", "3.4", "-S", "SCRAM-SHA-256=[name=a,password=b]"],
     "SCRAM is only supported in metadata.version 3.5-IV2 or later."),
    (["--feature", "transaction.version=3"], "Unsupported value 3 for transaction.version: supported versions are "
                                             "1 to 2"),
    (["--feature", "kraft.version=1"], "Unsupported feature: kraft.version. Supported features are: group.version, "
                                       "share.version, transaction.version"),
    (["-S", "SCRAM-SHA-256=[password=b]"], "You must supply 'name' to add-scram"),
    (["--release-version", "9.9"], "Unknown release version '9.9'. Supported versions are: 3.0-IV1 to 3.9-IV0"),
])
def test_bad_format_input_is_one_line_and_exit_1(capsys, tmp_path, args, message):
    config = _properties(tmp_path, tmp_path / "data")
    cluster = [] if "-t" in args else ["-t", CLUSTER_ID]
    result = in_process(capsys, "storage", "format", "-c", config, *cluster, *args)
    assert (result.returncode, one_error_line(result)) == (1, f"gregor storage: error: {message}")
    assert not (tmp_path / "data").exists()


def test_random_uuid_and_info_of_an_unformatted_node(capsys, tmp_path):
    made = in_process(capsys, "storage", "random-uuid").stdout.strip()
    assert len(made) == 22 and len(base64.urlsafe_b64decode(made + "==")) == 16
    info = in_process(capsys, "storage", "info", "-c", _properties(tmp_path, tmp_path / "data"))
    assert info.returncode == 1
    assert info.stdout.endswith(f"Found problem:\n  {tmp_path / 'data'} does not exist.\n")


def test_scram_arguments_as_kafka_parses_them():
    salt = base64.b64encode(b"0123456789abcdef").decode()
    parsed = parse_scram(f'SCRAM-SHA-256=[name=alice,salt="{salt}",iterations=4096,password=alice-secret]')
    expected = new_credential("SCRAM-SHA-256", "alice-secret", 4096, b"0123456789abcdef")
    record = bootstrap_records(21, {}, [parsed])[-1]
    assert (record.name, record.stored_key, record.server_key) == ("alice", expected.stored_key, expected.server_key)
    for argument, message in [("SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not "
                                                                   "supported."),
                              ("SCRAM-SHA-256=name=a", "Expected configuration string to start with ["),
                              ("SCRAM-SHA-256=[name=a,saltedpassword=AAAA]",
                               "You must supply 'salt' with 'saltedpassword' to add-scram"),
                              ("SCRAM-SHA-256=[name=a,password=b,iterations=10]",
                               "The 'iterations' value must be >= 4096 for add-scram using SCRAM-SHA-256"),
                              ("SCRAM-SHA-256=[name=a,password=b,colour=red]", "Unknown SCRAM configurations: colour")]:
        with pytest.raises(ScramArgumentError, match=re.escape(message)):
            parse_scram(argument)
    with pytest.raises(BootstrapError):
        bootstrap_records(0, {})


def _quickstart_properties(tmp_path, *extra: str) -> str:
    """Kafka 4's quickstart shape: a combined node bootstrapping its quorum from its own controller listener."""
    path = tmp_path / "quickstart.properties"
    path.write_text("\n".join(["process.roles=broker,controller", "node.id=1", f"log.dirs={tmp_path / 'data'}",
                               "listeners=PLAINTEXT://localhost:19092,CONTROLLER://localhost:19093",
                               "controller.quorum.bootstrap.servers=localhost:19093", *extra]) + "\n")
    return str(path)


@pytest.mark.parametrize("extra, args, message", [
    ((), [], "Because controller.quorum.voters is not set on this controller, you must specify --standalone "
             "(Gregor supports no other dynamic quorum)."),
    ((), ["--initial-controllers", "1@localhost:19093:AAAAAAAAAAAAAAAAAAAAAA"],
     "--initial-controllers: dynamic quorums (KIP-853) are not supported: name the voters in controller.quorum.voters"),
    ((), ["--no-initial-controllers"],
     "--no-initial-controllers: dynamic quorums (KIP-853) are not supported: name the voters in "
     "controller.quorum.voters"),
    (("controller.quorum.voters=1@localhost:19093",), ["--standalone"],
     "You cannot specify controller.quorum.voters and format the node with --standalone. If you want the node to "
     "be its quorum's one voter, remove controller.quorum.voters and set controller.quorum.bootstrap.servers to its "
     "controller listener instead."),
    (("controller.quorum.bootstrap.servers=otherhost:9093",), ["--standalone"],
     "controller.quorum.bootstrap.servers: dynamic quorums (KIP-853) are not supported: name the voters in "
     "controller.quorum.voters"),
])
def test_quorum_flags_of_format_as_kafka_storage_within_static_voters(capsys, tmp_path, extra, args, message):
    result = in_process(capsys, "storage", "format", "-t", CLUSTER_ID, "-c", _quickstart_properties(tmp_path, *extra),
                        *args)
    assert result.returncode == 1
    assert one_error_line(result).startswith("gregor storage: error: ")
    assert one_error_line(result).endswith(message)
    assert not (tmp_path / "data").exists()


def test_standalone_formats_the_quickstart_node(capsys, tmp_path):
    result = in_process(capsys, "storage", "format", "--standalone", "-t", CLUSTER_ID,
                        "-c", _quickstart_properties(tmp_path))
    assert result.returncode == 0
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["bootstrap.checkpoint", "meta.properties"]
