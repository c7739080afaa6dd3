"""A burst of pipelined requests on one connection, as a `linger.ms=0` client sends them: the
broker gathers the acks=all produce requests it reads together and appends them at the end of the
step, yet every request sees the log in request order (a ListOffsets between produce requests, an
acks=1 produce after acks=all ones) and each produce gets its own offsets or error."""

from __future__ import annotations

import socket
import struct

from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import ListOffsetsRequest, ListOffsetsResponse, ProduceRequest, ProduceResponse

from tests.interop.test_abuse import create_topic
from tests.interop.test_malformed import raw_batch

TOPIC = "pipelined"


def _produce(records: bytes, acks: int) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=10_000, topic_data=[ProduceRequest.TopicProduceData(
        name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])


def _latest() -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            assert chunk, "the broker closed the connection"
            data += chunk
        return data
    return exactly(struct.unpack(">i", exactly(4))[0])


def test_a_burst_of_pipelined_requests_is_served_in_request_order(broker):
    create_topic(broker.bootstrap, TOPIC)
    burst = [(_produce(raw_batch(1), -1), 9), (_produce(raw_batch(2), -1), 9),
             (_produce(raw_batch(1, corrupt_crc=True), -1), 9), (_latest(), 1),
             (_produce(raw_batch(1), -1), 9), (_produce(raw_batch(1), 1), 9), (_produce(raw_batch(3), -1), 9),
             (_latest(), 1)]
    with socket.create_connection(("127.0.0.1", broker.port), timeout=20) as sock:
        sock.sendall(b"".join(encode_request(i, "burst", request, version)
                              for i, (request, version) in enumerate(burst)))
        answers = []
        for i, (request, version) in enumerate(burst):
            frame = memoryview(_read_frame(sock))
            header, offset = decode_response_header(frame, request.API_KEY, version)
            assert header.correlation_id == i
            if isinstance(request, ProduceRequest):
                (answer,) = ProduceResponse.decode(frame[offset:], version).responses[0].partition_responses
                answers.append(("produce", answer.error_code, answer.base_offset))
            else:
                (answer,) = ListOffsetsResponse.decode(frame[offset:], version).topics[0].partitions
                answers.append(("latest", answer.error_code, answer.offset))
    assert answers == [("produce", 0, 0), ("produce", 0, 1), ("produce", 2, -1), ("latest", 0, 3),
                       ("produce", 0, 3), ("produce", 0, 4), ("produce", 0, 5), ("latest", 0, 8)]
