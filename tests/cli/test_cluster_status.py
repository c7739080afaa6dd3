"""`gregor cluster status` through its command line: brokers, controller, the metadata quorum and
partition health against a running broker; a missing broker and wrong arguments give one line."""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewTopic

from gregor.cli import cluster
from gregor.client.admin import ClusterDescription, QuorumInfo, QuorumReplica, TopicDescription
from gregor.client.network.cluster import Node, PartitionMetadata

from tests.cli.conftest import gregor, in_process, one_error_line


def field(output: str, name: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in output.splitlines() if line.startswith(f"{name}:"))


def test_status_names_brokers_controller_quorum_and_counts_partitions(broker, bootstrap):
    topic = f"status-{uuid.uuid4().hex[:8]}"
    admin = ConfluentAdmin({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(10)
    before = gregor("cluster", "status", *bootstrap)
    assert before.returncode == 0, before.stderr
    out = before.stdout
    assert field(out, "Controller") == "1" and field(out, "Brokers") == "1"
    assert f"127.0.0.1:{broker.port}" in out
    assert field(out, "LeaderId") == "1" and int(field(out, "HighWatermark")) > 0
    voter = next(line.split() for line in out.splitlines() if line.endswith("Voter"))
    assert voter[0] == "1" and voter[2] == "0"  # the one voter, no lag
    assert int(field(out, "Partitions")) >= 3
    assert (field(out, "UnderReplicated"), field(out, "Offline")) == ("0", "0")
    healthy = gregor("cluster", "status", *bootstrap, "--fail-on-unhealthy")
    assert healthy.returncode == 0


def test_a_missing_broker_is_one_line_within_the_timeout(unreachable):
    result = gregor("cluster", "status", *unreachable, "--timeout", "1500")
    assert result.returncode == 1
    assert "cannot reach the cluster" in one_error_line(result)


def test_wrong_arguments_are_one_line_and_exit_2(capsys):
    assert in_process(capsys, "cluster").returncode == 2
    missing = in_process(capsys, "cluster", "status")
    assert missing.returncode == 2 and "--bootstrap-server" in one_error_line(missing)
    assert in_process(capsys, "cluster", "status", "--bootstrap-server", "x:1", "--timeout", "-5").returncode == 2


class _ScriptedAdmin:
    """An admin client answering as a three-broker cluster with one offline and one
    under-replicated partition (a single test broker cannot get into that state)."""

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return None

    def describe_cluster(self):
        return ClusterDescription("scripted", Node(2, "h2", 9092), [Node(i, f"h{i}", 9092) for i in (1, 2, 3)])

    def describe_metadata_quorum(self):
        return QuorumInfo(2, 7, 40, [QuorumReplica(1, 38), QuorumReplica(2, 40), QuorumReplica(3, 40)], [])

    def list_topics(self, internal=False):
        return {"orders": None}

    def describe_topics(self, names):
        partitions = [PartitionMetadata("orders", 0, 1, 3, (1, 2, 3), (1, 2, 3)),
                      PartitionMetadata("orders", 1, -1, 4, (2, 3), (3,)),
                      PartitionMetadata("orders", 2, 3, 2, (3, 1), (3,))]
        return {"orders": TopicDescription("orders", None, False, partitions)}


def test_unhealthy_partitions_are_listed_and_fail_the_health_check(capsys, monkeypatch):
    monkeypatch.setattr(cluster, "open_admin", lambda args: _ScriptedAdmin())
    result = in_process(capsys, "cluster", "status", "--bootstrap-server", "h1:9092", "--fail-on-unhealthy")
    assert result.returncode == cluster.EXIT_UNHEALTHY, result.stderr
    out = result.stdout
    assert (field(out, "Partitions"), field(out, "UnderReplicated"), field(out, "Offline")) == ("3", "1", "1")
    rows = [line.split() for line in out.splitlines() if line.startswith("orders")]
    assert rows == [["orders", "1", "offline", "-1", "2,3", "3"], ["orders", "2", "under-replicated", "3", "3,1", "3"]]
    lag = {line.split()[0]: line.split()[2] for line in out.splitlines() if line.endswith("Voter")}
    assert lag == {"1": "2", "2": "0", "3": "0"}
    assert in_process(capsys, "cluster", "status", "--bootstrap-server", "h1:9092").returncode == 0
