"""The controller mutation quota (KIP-599) on the wire: with `controller_mutation_rate=5` for one
client id and a 2-sample window (a burst of 10 partitions), CreateTopics v7 takes a topic of 12
partitions (the bucket was not below zero), then refuses the next with THROTTLING_QUOTA_EXCEEDED
and the time until the bucket refills; CreateTopics v5 (before the error existed) goes through and
is only throttled; another client id is not limited; DeleteTopics v6 and CreatePartitions v3 count
partitions too."""

from __future__ import annotations

import socket
import struct

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import (
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from gregor.protocol.primitives import Reader

pytestmark = pytest.mark.interop


def _call(port: int, client_id: str, request, response_type, version: int):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(encode_request(1, client_id, request, version))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = memoryview(sock.recv(size, socket.MSG_WAITALL))
    _, body = decode_response_header(frame, request.API_KEY, version)
    return response_type.decode(Reader(frame, body), version)


def _create(port: int, client_id: str, name: str, partitions: int, version: int = 7) -> CreateTopicsResponse:
    request = CreateTopicsRequest(timeout_ms=30000, topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1)])
    return _call(port, client_id, request, CreateTopicsResponse, version)


def test_partition_mutations_are_held_to_the_clients_rate(broker_factory):
    from gregor import AdminClient
    from gregor.client.acls import QuotaAlteration
    broker = broker_factory({"quota.window.num": "2", "quota.window.size.seconds": "1"})
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        assert admin.alter_client_quotas([QuotaAlteration({"client-id": "mutator"},
                                                          {"controller_mutation_rate": 5.0})]) == [None]

    first = _create(broker.port, "mutator", "m-first", 12)
    assert first.topics[0].error_code == 0  # 10 tokens, now -2
    assert 0 < first.throttle_time_ms <= 400  # back at zero in 2 / 5 s

    refused = _create(broker.port, "mutator", "m-refused", 1)
    assert refused.topics[0].error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert refused.topics[0].error_message == "The throttling quota has been exceeded."
    assert refused.throttle_time_ms > 0

    permissive = _create(broker.port, "mutator", "m-old-version", 3, version=5)
    assert permissive.topics[0].error_code == 0 and permissive.throttle_time_ms > 0

    other = _create(broker.port, "someone-else", "m-other", 30)
    assert other.topics[0].error_code == 0 and other.throttle_time_ms == 0

    deleted = _call(broker.port, "mutator", DeleteTopicsRequest(timeout_ms=30000, topics=[
        DeleteTopicsRequest.DeleteTopicState(name="m-other")]), DeleteTopicsResponse, 6)
    assert deleted.responses[0].error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED  # still below zero
    extended = _call(broker.port, "mutator", CreatePartitionsRequest(timeout_ms=30000, topics=[
        CreatePartitionsRequest.CreatePartitionsTopic(name="m-first", count=20)]), CreatePartitionsResponse, 3)
    assert extended.results[0].error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
