"""WireSession, sans-IO: frames split or joined anyhow, in-order matching, violations, and
request frames whose large record batches (whole or in chunks) are parts of their own."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gregor.client.network.request_frames import LARGE_RECORDS, RecordChunks
from gregor.client.network.wire import WireSession
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.headers import encode_request, encode_response
from gregor.protocol.messages import (
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse, ProduceRequest,
)


def response_frame(correlation_id: int, response, api_key: int, version: int) -> bytes:
    return b"".join(encode_response(correlation_id, response, api_key, version))


def metadata_response(cluster_id: str) -> MetadataResponse:
    return MetadataResponse(cluster_id=cluster_id, controller_id=1, brokers=[
        MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092)])


def test_request_frames_carry_size_header_and_increasing_correlation_ids():
    session = WireSession("me")
    first_id, (first,) = session.encode_request(MetadataRequest(topics=None), 12)
    second_id, _ = session.encode_request(MetadataRequest(topics=None), 1)
    assert (first_id, second_id) == (0, 1)
    size, api_key, version, correlation_id = struct.unpack_from(">ihhi", first)
    assert (size, api_key, version, correlation_id) == (len(first) - 4, ApiKey.METADATA, 12, 0)
    assert session.in_flight == 2


def test_a_request_that_expects_no_response_does_not_wait_in_the_queue():
    session = WireSession(None)
    session.encode_request(ProduceRequest(acks=0), 9, expect_response=False)
    assert session.in_flight == 0


@given(st.lists(st.integers(min_value=1, max_value=50), max_size=40), st.integers(min_value=1, max_value=4))
def test_replies_come_out_in_order_however_the_bytes_are_chunked(cuts, count):
    session = WireSession("c")
    versions = [12, 2, 9, 4][:count]
    stream = b""
    for index, version in enumerate(versions):
        correlation_id, _ = session.encode_request(MetadataRequest(topics=[]), version)
        stream += response_frame(correlation_id, metadata_response(f"cluster-{index}"), ApiKey.METADATA, version)
    replies = []
    position = 0
    for cut in cuts:
        replies += session.receive_data(stream[position:position + cut])
        position += cut
    replies += session.receive_data(stream[position:])
    assert [reply.response.cluster_id for reply in replies] == [f"cluster-{i}" for i in range(count)]
    assert [reply.request.version for reply in replies] == versions
    assert session.in_flight == 0 and session.violation is None


def test_a_response_for_another_correlation_id_is_a_violation():
    session = WireSession("c")
    session.encode_request(MetadataRequest(topics=[]), 12)
    assert session.receive_data(response_frame(7, metadata_response("x"), ApiKey.METADATA, 12)) == []
    assert session.violation.name == "_BAD_MSG" and "correlation id 7" in str(session.violation)
    assert [pending.correlation_id for pending in session.take_in_flight()] == [0]


def test_an_undecodable_body_fails_its_request_with_bad_msg():
    session = WireSession("c")
    correlation_id, _ = session.encode_request(MetadataRequest(topics=[]), 12)
    body = struct.pack(">i", correlation_id) + b"\x00" + b"\xff" * 3
    (reply,) = session.receive_data(struct.pack(">i", len(body)) + body)
    assert reply.error.name == "_BAD_MSG" and session.violation is reply.error


def test_a_response_with_nothing_in_flight_is_a_violation():
    session = WireSession("c")
    session.receive_data(response_frame(0, metadata_response("x"), ApiKey.METADATA, 12))
    assert session.violation is not None


def test_api_versions_refusal_is_read_in_the_v0_format_whatever_version_was_asked():
    session = WireSession("c")
    correlation_id, _ = session.encode_request(ApiVersionsRequest(client_software_name="a"), 4)
    refusal = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=2)])
    (reply,) = session.receive_data(response_frame(correlation_id, refusal, ApiKey.API_VERSIONS, 0))
    assert reply.response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(key.api_key, key.max_version) for key in reply.response.api_keys] == [(ApiKey.API_VERSIONS, 2)]


@pytest.mark.parametrize("version", [3, 9])  # records with an int32 length, and compact ones
def test_a_produce_frame_keeps_large_records_apart_and_concatenates_to_the_encoded_request(version):
    """Record batches of 16 KiB or more are written as they are (the same object, not copied into
    the frame); the parts together are the frame `encode_request` makes, and small ones stay inline."""
    for size in (LARGE_RECORDS, LARGE_RECORDS - 1):
        records = bytes(range(256)) * (size // 256) + bytes(size % 256)
        request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
        _, frame = WireSession("me").encode_request(request, version)
        assert (frame[1] is records) if size >= LARGE_RECORDS else len(frame) == 1
        assert b"".join(frame) == encode_request(0, "me", request, version)


@pytest.mark.parametrize("version", [3, 9])
def test_a_batch_given_in_chunks_is_written_chunk_by_chunk(version):
    """A records field given as RecordChunks (a producer batch's header and encoded chunks):
    large, each chunk is a part of the frame as it is; small, they are joined inline; either way
    the frame is that of the same bytes given whole."""
    for sizes in ([61, LARGE_RECORDS, 3000, 1], [61, 700, 2]):
        chunks = [bytes([index]) * size for index, size in enumerate(sizes)]
        frames = []
        for records in (RecordChunks(chunks), b"".join(chunks)):
            request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
                name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
            frames.append(WireSession("me").encode_request(request, version)[1])
        chunked, whole = frames
        if sum(sizes) >= LARGE_RECORDS:
            assert all(part is chunk for part, chunk in zip(chunked[1:], chunks))
        else:
            assert len(chunked) == 1
        assert b"".join(chunked) == b"".join(whole) == encode_request(0, "me", ProduceRequest(
            acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=b"".join(chunks))])]), version)
