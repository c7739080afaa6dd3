"""Helpers for tests of a real controller quorum: start voters, find the leader, call the
active controller with a raw request (retrying NOT_CONTROLLER, as brokers do)."""

from __future__ import annotations

import socket
import struct
import time

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import CreateTopicsRequest, CreateTopicsResponse
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from gregor.protocol.primitives import Reader

from tests.broker_process import BrokerProcess

CLUSTER_ID = "R3JlZ29yUXVvcnVtVGVzdA"
SESSION_MS = 1500  # broker.session.timeout.ms of the `controllers` fixture


def call(port: int, request, version: int, response_class):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(encode_request(7, "quorum-test", request, version))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = memoryview(sock.recv(size, socket.MSG_WAITALL))
    _, body = decode_response_header(frame, request.API_KEY, version)
    return response_class.decode(Reader(frame, body), version)


DESCRIBE_QUORUM = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
    topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])


def describe(port: int) -> DescribeQuorumResponse.PartitionData | None:
    try:
        return call(port, DESCRIBE_QUORUM, 1, DescribeQuorumResponse).topics[0].partitions[0]
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


def committed_view(nodes: list[BrokerProcess], timeout: float = 20):
    """(leader node index, its answer) once the leader has committed an entry of its own epoch:
    before that it reports the high watermark as unknown (-1), as Kafka's leader does."""
    deadline = time.monotonic() + timeout
    while True:
        index, answer = leader_view(nodes, timeout)
        if answer.high_watermark >= 0:
            return index, answer
        if time.monotonic() > deadline:
            raise AssertionError(f"leader {answer.leader_id} committed nothing of epoch {answer.leader_epoch}")
        time.sleep(0.1)


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


def active(nodes) -> int:
    """The port of the quorum leader."""
    index, _ = leader_view(nodes)
    return nodes[index].port


def to_controller(nodes, request, version: int, response_class, timeout: float = 30):
    """Send to the active controller, as a broker does: find it again and retry while the answer
    is NOT_CONTROLLER (an election, or a new leader still replaying the log)."""
    deadline = time.monotonic() + timeout
    while True:
        response = call(active(nodes), request, version, response_class)
        if response.error_code != ErrorCode.NOT_CONTROLLER or time.monotonic() > deadline:
            return response
        time.sleep(0.1)


def create_topic(nodes, name: str, partitions: int, replication_factor: int):
    request = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor)], timeout_ms=5000)
    return to_controller_result(nodes, request, 7, CreateTopicsResponse).topics[0]


def to_controller_result(nodes, request, version: int, response_class, timeout: float = 30):
    """Like to_controller, for responses that carry their errors per item."""
    deadline = time.monotonic() + timeout
    while True:
        response = call(active(nodes), request, version, response_class)
        items = next((getattr(response, name) for name in ("topics", "results", "responses")
                      if getattr(response, name, None)), [])
        if all(item.error_code != ErrorCode.NOT_CONTROLLER for item in items) or time.monotonic() > deadline:
            return response
        time.sleep(0.1)
