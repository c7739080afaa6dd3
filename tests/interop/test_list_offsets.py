"""ListOffsets on the wire at every version, encoded and decoded by kafka-python's codec: the
special timestamps Kafka defines, including v9's latest-tiered offset, which a broker without
remote storage answers with -1."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from tests.interop.test_offset_for_leader_epoch import exchange

pytestmark = pytest.mark.interop

LATEST, EARLIEST, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -4, -5


@pytest.fixture(scope="module")
def topic(broker) -> str:
    """One partition holding three records."""
    name = f"offsets-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(3):
        producer.produce(name, b"v%d" % i, partition=0)
    assert producer.flush(10) == 0
    return name


def list_offsets(port: int, version: int, topic: str, timestamp: int):
    _Topic = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, timeout_ms=5000, topics=[
        _Topic(name=topic, partitions=[_Topic.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=timestamp, max_num_offsets=1)])])
    response = exchange(port, request, ListOffsetsResponse, version)
    (answer,) = response.topics[0].partitions
    return answer


def test_api_versions_advertises_versions_0_to_10(broker):
    response = exchange(broker.port, ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                        ApiVersionsResponse, 3)
    (entry,) = [key for key in response.api_keys if key.api_key == 2]
    assert (entry.min_version, entry.max_version) == (0, 10)


@pytest.mark.parametrize("version", range(1, 11))
def test_earliest_and_latest_at_every_version(broker, topic, version):
    assert list_offsets(broker.port, version, topic, EARLIEST).offset == 0
    assert list_offsets(broker.port, version, topic, LATEST).offset == 3


@pytest.mark.parametrize("version", [9, 10])
def test_latest_tiered_is_minus_one_without_remote_storage(broker, topic, version):
    answer = list_offsets(broker.port, version, topic, LATEST_TIERED)
    assert (answer.error_code, answer.offset, answer.timestamp, answer.leader_epoch) == (0, -1, -1, -1)


@pytest.mark.parametrize("version", [8, 9, 10])
def test_earliest_local_is_the_log_start(broker, topic, version):
    assert list_offsets(broker.port, version, topic, EARLIEST_LOCAL).offset == 0
