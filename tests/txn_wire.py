"""Transactions on the wire without a transaction coordinator: transactional batches built with
`gregor.records` and sent in Produce with a producer id and epoch, and COMMIT/ABORT markers sent
with WriteTxnMarkers as a coordinator would; read back with raw Fetch and ListOffsets. What the partition side of transactions is tested with."""

from __future__ import annotations

import socket
import struct
import time

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import (
    FetchRequest, FetchResponse, InitProducerIdRequest, InitProducerIdResponse, ListOffsetsRequest,
    ListOffsetsResponse, ProduceRequest, ProduceResponse, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
)
from gregor.protocol.primitives import Reader
from gregor.records.record import BatchBuilder

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def call(port: int, request, version: int, response_class, timeout: float = 30):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(encode_request(5, "txn-wire", request, version))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = memoryview(sock.recv(size, socket.MSG_WAITALL))
    _, body = decode_response_header(frame, request.API_KEY, version)
    return response_class.decode(Reader(frame, body), version)


def init_producer_id(port: int) -> int:
    response = call(port, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000,
                                                producer_id=-1, producer_epoch=-1), 4, InitProducerIdResponse)
    assert response.error_code == ErrorCode.NONE, ErrorCode(response.error_code)
    return response.producer_id


def batch(values: list[bytes], producer_id: int, epoch: int, sequence: int, transactional: bool = True) -> bytes:
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                           is_transactional=transactional)
    for value in values:
        builder.append(int(time.time() * 1000), None, value)
    return builder.build()


def produce(port: int, topic: str, partition: int, records: bytes, acks: int = -1) -> tuple[ErrorCode, int]:
    """(error, base offset) of one Produce of `records` to one partition."""
    request = ProduceRequest(acks=acks, timeout_ms=10_000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    answer = call(port, request, 9, ProduceResponse).responses[0].partition_responses[0]
    return ErrorCode(answer.error_code), answer.base_offset


def write_markers(port: int, producer_id: int, epoch: int, commit: bool, partitions: dict[str, list[int]],
                  coordinator_epoch: int = 0) -> dict[tuple[str, int], ErrorCode]:
    request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer_id, producer_epoch=epoch, transaction_result=commit,
        coordinator_epoch=coordinator_epoch,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=name, partition_indexes=indexes)
                for name, indexes in partitions.items()])])
    response = call(port, request, 1, WriteTxnMarkersResponse)
    return {(topic.name, p.partition_index): ErrorCode(p.error_code)
            for marker in response.markers for topic in marker.topics for p in topic.partitions}


def fetch(port: int, topic: str, partition: int, offset: int, isolation_level: int) -> FetchResponse.PartitionData:
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                           isolation_level=isolation_level, session_id=0, session_epoch=-1, topics=[
                               FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                                   partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20,
                                   current_leader_epoch=-1, log_start_offset=-1)])],
                           forgotten_topics_data=[], rack_id="")
    return call(port, request, 11, FetchResponse).responses[0].partitions[0]


def latest_offset(port: int, topic: str, partition: int, isolation_level: int) -> int:
    request = ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=-1, timestamp=-1)])])
    answer = call(port, request, 7, ListOffsetsResponse).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE, ErrorCode(answer.error_code)
    return answer.offset

