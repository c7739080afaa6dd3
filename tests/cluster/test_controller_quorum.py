"""Three `gregor server --override process.roles=controller` processes form a metadata quorum
over real sockets: they elect one leader, replicate the log, and elect another when the leader
is killed (-9) or stops; the killed one rejoins and catches up.

The quorum is read with DescribeQuorum on the controller listener, as
`kafka-metadata-quorum.sh describe --status` does.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from gregor.protocol.primitives import Reader

from tests.broker_process import BrokerProcess

CLUSTER_ID = "R3JlZ29yUXVvcnVtVGVzdA"
pytestmark = pytest.mark.slow


def call(port: int, request, version: int, response_class):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(encode_request(7, "quorum-test", request, version))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = memoryview(sock.recv(size, socket.MSG_WAITALL))
    _, body = decode_response_header(frame, request.API_KEY, version)
    return response_class.decode(Reader(frame, body), version)


def describe(port: int) -> DescribeQuorumResponse.PartitionData | None:
    request = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])
    try:
        return call(port, request, 1, DescribeQuorumResponse).topics[0].partitions[0]
    except OSError:
        return None


def make_quorum(tmp_path, size: int = 3) -> list[BrokerProcess]:
    nodes = []
    for i in range(1, size + 1):
        (tmp_path / f"controller{i}").mkdir()
        nodes.append(BrokerProcess(str(tmp_path / f"controller{i}" / "data")))
    voters = ",".join(f"{i}@127.0.0.1:{node.port}" for i, node in enumerate(nodes, 1))
    for i, node in enumerate(nodes, 1):
        node.overrides = {"process.roles": "controller", "node.id": str(i), "cluster.id": CLUSTER_ID,
                          "listeners": f"CONTROLLER://127.0.0.1:{node.port}", "controller.quorum.voters": voters}
    return nodes


@pytest.fixture
def quorum(tmp_path):
    nodes = make_quorum(tmp_path)
    for node in nodes:
        node.start()
    yield nodes
    for node in nodes:
        node.stop()


def leader_view(nodes: list[BrokerProcess], timeout: float = 20):
    """(leader node index, its DescribeQuorum answer) once exactly one live node answers as leader."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answers = [(i, describe(node.port)) for i, node in enumerate(nodes)
                   if node.proc is not None and node.proc.poll() is None]
        leaders = [(i, a) for i, a in answers if a is not None and a.error_code == ErrorCode.NONE]
        if len(leaders) == 1:
            return leaders[0]
        time.sleep(0.1)
    raise AssertionError(f"no single quorum leader within {timeout}s:\n" + "\n".join(n.output() for n in nodes))


def caught_up(nodes, timeout: float = 20):
    """The leader's answer once every voter's log end offset equals the leader's."""
    deadline = time.monotonic() + timeout
    while True:
        index, answer = leader_view(nodes)
        ends = {voter.replica_id: voter.log_end_offset for voter in answer.current_voters}
        if len(set(ends.values())) == 1 and answer.high_watermark == ends[answer.leader_id]:
            return index, answer
        if time.monotonic() > deadline:
            raise AssertionError(f"voters did not catch up: {ends}, high watermark {answer.high_watermark}")
        time.sleep(0.1)


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


def test_a_killed_leader_is_replaced_and_catches_up_after_restart(quorum):
    index, before = caught_up(quorum)
    quorum[index].kill9()
    new_index, after = leader_view(quorum)
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


def test_the_controller_listener_advertises_only_the_quorum_apis(quorum):
    response = call(quorum[0].port, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                    ApiVersionsResponse)
    assert {entry.api_key for entry in response.api_keys} == {1, 18, 19, 20, 33, 37, 44, 52, 53, 54, 55, 56, 59, 62, 63}


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
    args = [sys.executable, "-m", "gregor.cli.main", "server"]
    for key, value in settings.items():
        args += ["--override", f"{key}={value}"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_single_node_broker_describes_its_own_one_voter_quorum(broker):
    answer = describe(broker.port)
    assert (answer.error_code, answer.leader_id) == (ErrorCode.NONE, 1)
    assert [voter.replica_id for voter in answer.current_voters] == [1]
    assert answer.high_watermark > 0 and answer.current_voters[0].log_end_offset == answer.high_watermark
