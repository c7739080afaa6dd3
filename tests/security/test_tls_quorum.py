"""Three controllers whose raft traffic is mutual TLS: votes, BeginQuorumEpoch and fetches between
voters go over their SSL controller listener (each voter presents its certificate, which the
others require), the quorum elects a leader, every voter catches up, and after the leader is
killed the other two elect a new one over TLS."""

from __future__ import annotations

import os
import socket
import ssl
import struct
import time

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from gregor.protocol.primitives import Reader
from tests.broker_process import BrokerProcess
from tests.cluster.quorum import CLUSTER_ID

pytestmark = [pytest.mark.interop, pytest.mark.slow]


def _describe(port: int, certificates) -> DescribeQuorumResponse.PartitionData | None:
    context = ssl.create_default_context(cafile=certificates.ca)
    context.load_cert_chain(certificates.cert("broker"), certificates.key("broker"))
    request = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])
    try:
        with context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                                 server_hostname="localhost") as sock:
            sock.sendall(encode_request(7, "tls-quorum-test", request, 1))
            frame = memoryview(_exactly(sock, struct.unpack(">i", _exactly(sock, 4))[0]))
    except (OSError, struct.error):
        return None
    _, body = decode_response_header(frame, request.API_KEY, 1)
    return DescribeQuorumResponse.decode(Reader(frame, body), 1).topics[0].partitions[0]


def _exactly(sock: ssl.SSLSocket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _caught_up(nodes: list[BrokerProcess], certificates, timeout: float = 30):
    """(leader index, its answer) once one live voter leads and the live voters' logs end where its does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = [i for i, node in enumerate(nodes) if node.proc is not None and node.proc.poll() is None]
        answers = {i: _describe(nodes[i].port, certificates) for i in live}
        leaders = [i for i, answer in answers.items() if answer is not None and answer.error_code == ErrorCode.NONE]
        if len(leaders) == 1:
            answer = answers[leaders[0]]
            ends = {v.replica_id: v.log_end_offset for v in answer.current_voters if v.replica_id - 1 in live}
            if len(ends) == len(live) and len(set(ends.values())) == 1 and answer.high_watermark >= 0:
                return leaders[0], answer
        time.sleep(0.2)
    raise AssertionError("no caught-up quorum over TLS:\n" + "\n".join(node.output()[-2000:] for node in nodes))


def test_voters_elect_and_replicate_over_mutual_tls(tmp_path, certificates):
    nodes = []
    for i in range(1, 4):
        os.makedirs(tmp_path / f"controller{i}")
        nodes.append(BrokerProcess(str(tmp_path / f"controller{i}" / "data"),
                                   ready=lambda port: _describe(port, certificates) is not None))
    voters = ",".join(f"{i}@127.0.0.1:{node.port}" for i, node in enumerate(nodes, 1))
    for i, node in enumerate(nodes, 1):
        node.overrides = {
            "process.roles": "controller", "node.id": str(i), "cluster.id": CLUSTER_ID,
            "listeners": f"CONTROLLER://127.0.0.1:{node.port}", "controller.quorum.voters": voters,
            "listener.security.protocol.map": "CONTROLLER:SSL", "ssl.client.auth": "required",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": certificates.keystore("broker"),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": certificates.ca}
    try:
        for node in nodes[:-1]:  # a voter answers only once it has a quorum: start them all first
            _start_without_waiting(node)
        nodes[-1].start(timeout=60)
        leader, answer = _caught_up(nodes, certificates)
        assert {voter.replica_id for voter in answer.current_voters} == {1, 2, 3}
        epoch = answer.leader_epoch
        nodes[leader].kill9()
        new_leader, after = _caught_up(nodes, certificates)
        assert new_leader != leader and after.leader_epoch > epoch
    finally:
        for node in nodes:
            node.stop()
    assert not any("handshake failed" in node.output() for node in nodes)


def _start_without_waiting(node: BrokerProcess) -> None:
    ready, node.ready = node.ready, lambda port: True
    try:
        node.start()
    finally:
        node.ready = ready
