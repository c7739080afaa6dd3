"""Three `gregor server --override process.roles=controller` processes form a metadata quorum
over real sockets: they elect one leader, replicate the log, and elect another when the leader
is killed (-9) or stops; the killed one rejoins and catches up.

The quorum is read with DescribeQuorum on the controller listener, as
`kafka-metadata-quorum.sh describe --status` does.
"""

from __future__ import annotations

import struct
import subprocess
import sys

import pytest

from gregor.client import AdminClient
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    ApiVersionsRequest, ApiVersionsResponse, DescribeClusterRequest, DescribeClusterResponse,
)
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse

from tests.cli.conftest import in_process
from tests.cluster.quorum import (
    CLUSTER_ID, DESCRIBE_QUORUM, call, caught_up, committed_view, describe, leader_view, make_quorum,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def quorum(tmp_path):
    nodes = make_quorum(tmp_path)
    for node in nodes:
        node.start()
    yield nodes
    for node in nodes:
        node.stop()


def test_three_controllers_elect_one_leader_and_replicate(quorum):
    index, answer = caught_up(quorum)
    assert answer.leader_id == index + 1
    assert sorted(v.replica_id for v in answer.current_voters) == [1, 2, 3]
    assert answer.high_watermark >= 1  # the leader's LeaderChangeMessage, committed by a majority
    for i, node in enumerate(quorum):
        if i != index:
            follower = describe(node.port)
            assert follower.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert (follower.leader_id, follower.leader_epoch) == (answer.leader_id, answer.leader_epoch)


def test_describe_quorum_v2_lists_the_voters_controller_endpoints(quorum):
    """KIP-853's v2, as kafka-python and `kafka-metadata-quorum.sh` read it: null error messages,
    the voters' endpoints from the leader, none with a follower's NOT_LEADER_OR_FOLLOWER."""
    index, _ = caught_up(quorum)
    answer = call(quorum[index].port, DESCRIBE_QUORUM, 2, DescribeQuorumResponse)
    partition = answer.topics[0].partitions[0]
    assert (answer.error_message, partition.error_message, partition.error_code) == (None, None, ErrorCode.NONE)
    assert [v.replica_id for v in partition.current_voters] == [1, 2, 3]
    assert {(node.node_id, tuple((e.name, e.host, e.port) for e in node.listeners)) for node in answer.nodes} == {
        (i, (("CONTROLLER", "127.0.0.1", node.port),)) for i, node in enumerate(quorum, 1)}
    follower = call(quorum[(index + 1) % 3].port, DESCRIBE_QUORUM, 2, DescribeQuorumResponse)
    refused = follower.topics[0].partitions[0]
    assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and refused.error_message
    assert follower.nodes == []


def test_a_killed_leader_is_replaced_and_catches_up_after_restart(quorum):
    index, before = caught_up(quorum)
    quorum[index].kill9()
    new_index, after = committed_view(quorum)
    assert new_index != index and after.leader_epoch > before.leader_epoch
    assert after.high_watermark >= before.high_watermark  # nothing committed is lost
    quorum[index].restart()
    _, settled = caught_up(quorum)
    assert settled.leader_epoch >= after.leader_epoch


def test_a_stopped_leader_resigns_and_the_others_elect_at_once(quorum):
    index, before = caught_up(quorum)
    quorum[index].stop()
    new_index, after = leader_view(quorum, timeout=10)
    assert new_index != index and after.leader_epoch > before.leader_epoch


def test_the_controller_listener_advertises_only_the_quorum_and_operator_apis(quorum, capsys):
    response = call(quorum[0].port, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                    ApiVersionsResponse)
    # 17 and 36: SaslHandshake and SaslAuthenticate, as on Kafka's controller listener; 30, 31, 49, 51
    # and 57: CreateAcls, DeleteAcls, AlterClientQuotas, AlterUserScramCredentials, UpdateFeatures,
    # which brokers forward; 32 and 60: DescribeConfigs and DescribeCluster, for operators (KIP-919)
    assert {entry.api_key for entry in response.api_keys} == {1, 17, 18, 19, 20, 30, 31, 32, 33, 36, 37, 43, 44, 45,
                                                              46, 49, 51, 52, 53, 54, 55, 56, 57, 59, 60, 62, 63, 67}
    # KIP-919: DescribeCluster for controllers on any voter names all three and the leader, and
    # `gregor configs --bootstrap-controller` describes a controller that does not lead
    index, answer = caught_up(quorum)  # every voter follows the leader, so knows it
    for node in quorum:
        cluster = call(node.port, DescribeClusterRequest(endpoint_type=2), 1, DescribeClusterResponse)
        assert (cluster.error_code, cluster.cluster_id, cluster.controller_id) == (0, CLUSTER_ID, answer.leader_id)
        assert [(b.broker_id, b.port) for b in cluster.brokers] == [(i, n.port) for i, n in enumerate(quorum, 1)]
    follower = 1 if index != 0 else 2
    described = in_process(capsys, "configs", "--bootstrap-controller", quorum[index].bootstrap, "--describe",
                           "--entity-type", "brokers", "--entity-name", str(follower), "--all")
    assert described.returncode == 0, described.stderr
    assert f"  node.id={follower} sensitive=false synonyms={{STATIC_BROKER_CONFIG:node.id={follower}}}" \
        in described.stdout
    with AdminClient({"bootstrap.controllers": quorum[follower - 1].bootstrap}) as admin:
        assert admin.describe_metadata_quorum().leader_id == answer.leader_id  # sent to the leader
        described_cluster = admin.describe_cluster()
        assert (described_cluster.cluster_id, described_cluster.controller.node_id) == (CLUSTER_ID, answer.leader_id)
        assert [node.node_id for node in described_cluster.nodes] == [1, 2, 3]
    features = in_process(capsys, "features", "--bootstrap-controller", quorum[follower - 1].bootstrap, "describe")
    assert features.returncode == 0 and "Feature: transaction.version\tSupportedMinVersion: 1" in features.stdout


def refuses_to_start_with_one_line(settings: dict[str, str], message: str) -> None:
    """`gregor server` with these overrides exits 2 with one line naming the problem."""
    args = [sys.executable, "-m", "gregor.cli.main", "server"]
    for key, value in settings.items():
        args += ["--override", f"{key}={value}"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("overrides, message", [
    ({"controller.quorum.voters": "1@127.0.0.1:1,2@127.0.0.1:2"}, "must share one cluster id"),
    ({"controller.quorum.voters": "2@127.0.0.1:2", "cluster.id": CLUSTER_ID}, "a controller must be a voter"),
    ({"controller.quorum.voters": "one@127.0.0.1:2"}, "is not id@host:port"),
    ({"controller.quorum.voters": "1@127.0.0.1:1", "listeners": "PLAINTEXT://127.0.0.1:1"},
     "a controller needs a listener"),
])
def test_a_misconfigured_controller_refuses_to_start_with_one_line(tmp_path, overrides, message):
    settings = {"process.roles": "controller", "node.id": "1", "listeners": "CONTROLLER://127.0.0.1:0",
                "log.dirs": str(tmp_path / "data"), **overrides}
    refuses_to_start_with_one_line(settings, message)


@pytest.mark.parametrize("overrides, message", [
    ({"process.roles": "broker"}, "must share one cluster id"),
    ({"process.roles": "broker", "node.id": "1", "cluster.id": CLUSTER_ID}, "a broker-only node needs an id of its own"),
    ({"process.roles": "broker", "controller.quorum.voters": ""}, "needs the controller quorum's voters"),
    ({"process.roles": "broker,controller", "node.id": "3", "cluster.id": CLUSTER_ID},
     "a broker,controller node must be a voter"),
    ({"process.roles": "broker,controller", "node.id": "1", "cluster.id": CLUSTER_ID},
     "needs a listener named in controller.listener.names"),
])
def test_a_misconfigured_cluster_broker_refuses_to_start_with_one_line(tmp_path, overrides, message):
    settings = {"node.id": "5", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                "controller.quorum.voters": "1@127.0.0.1:1,2@127.0.0.1:2", **overrides}
    refuses_to_start_with_one_line(settings, message)


def test_a_single_node_broker_describes_its_own_one_voter_quorum(broker):
    answer = describe(broker.port)
    assert (answer.error_code, answer.leader_id) == (ErrorCode.NONE, 1)
    assert [voter.replica_id for voter in answer.current_voters] == [1]
    assert answer.high_watermark > 0 and answer.current_voters[0].log_end_offset == answer.high_watermark
    v2 = call(broker.port, DESCRIBE_QUORUM, 2, DescribeQuorumResponse)
    assert [(node.node_id, node.listeners) for node in v2.nodes] == [(1, [])]  # reached in process only


def test_a_quorum_request_naming_no_metadata_partition_closes_only_its_connection(broker):
    malformed = DescribeQuorumRequest(topics=[])
    with pytest.raises((OSError, struct.error)):
        call(broker.port, malformed, 1, DescribeQuorumResponse)
    assert describe(broker.port).error_code == ErrorCode.NONE  # the broker carries on
