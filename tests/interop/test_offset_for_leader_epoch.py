"""OffsetForLeaderEpoch against real gregor servers: every version on the wire through
kafka-python's codec, librdkafka validating its seek positions with it (KIP-320), and a leader
change in a cluster of three brokers (the old epoch's end on the new leader, followers refusing,
librdkafka validating its position against the new leader)."""

from __future__ import annotations

import logging
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

from gregor.protocol.error_codes import ErrorCode

pytestmark = pytest.mark.interop

_Topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
_Partition = _Topic.OffsetForLeaderPartition
UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
UNKNOWN_LEADER_EPOCH = ErrorCode.UNKNOWN_LEADER_EPOCH
FENCED_LEADER_EPOCH = ErrorCode.FENCED_LEADER_EPOCH
NOT_LEADER_OR_FOLLOWER = ErrorCode.NOT_LEADER_OR_FOLLOWER


def exchange(port: int, request, response_class, version: int):
    """One request encoded by kafka-python at `version`, its answer decoded by kafka-python."""
    request.with_header(correlation_id=11, client_id="epoch-test")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode(version=version, header=True, framed=True))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = sock.recv(size, socket.MSG_WAITALL)
    response = response_class.decode(frame, version=version, header=True)
    assert response.header.correlation_id == 11
    return response


def ask(port: int, version: int, topics: dict[str, list], replica_id: int = -1):
    request = OffsetForLeaderEpochRequest(replica_id=replica_id, topics=[
        _Topic(topic=name, partitions=partitions) for name, partitions in topics.items()])
    response = exchange(port, request, OffsetForLeaderEpochResponse, version)
    return {(topic.topic, p.partition): (p.error_code, p.leader_epoch, p.end_offset)
            for topic in response.topics for p in topic.partitions}


def make_topic(broker) -> str:
    """A new topic of one partition holding five records, all in leader epoch 0."""
    name = f"epochs-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(5):
        producer.produce(name, b"v%d" % i)
    assert producer.flush(10) == 0
    return name


@pytest.fixture(scope="module")
def topic(broker) -> str:
    return make_topic(broker)


def test_api_versions_advertises_versions_0_to_4(broker):
    response = exchange(broker.port, ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                        ApiVersionsResponse, 3)
    (entry,) = [key for key in response.api_keys if key.api_key == 23]
    assert (entry.min_version, entry.max_version) == (0, 4)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_version_answers_the_current_epoch_and_unknown_partitions(broker, topic, version):
    answers = ask(broker.port, version, {
        topic: [_Partition(partition=0, current_leader_epoch=-1, leader_epoch=0),
                _Partition(partition=3, current_leader_epoch=-1, leader_epoch=0)],
        "no-such-topic": [_Partition(partition=0, current_leader_epoch=-1, leader_epoch=0)]})
    # the current (latest) epoch ends at the log end offset; v0 has no epoch in the answer
    assert answers == {(topic, 0): (0, 0 if version >= 1 else -1, 5),
                       (topic, 3): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
                       ("no-such-topic", 0): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)}


@pytest.mark.parametrize("version", [2, 3, 4])
def test_a_current_leader_epoch_from_the_future_is_unknown(broker, topic, version):
    assert ask(broker.port, version, {topic: [_Partition(partition=0, current_leader_epoch=0, leader_epoch=0)]}) \
        == {(topic, 0): (0, 0, 5)}
    assert ask(broker.port, version, {topic: [_Partition(partition=0, current_leader_epoch=1, leader_epoch=0)]}) \
        == {(topic, 0): (UNKNOWN_LEADER_EPOCH, -1, -1)}


@pytest.mark.parametrize("replica_id", [-1, 1, 7])
def test_consumers_and_replicas_get_the_same_answer(broker, topic, replica_id):
    answers = ask(broker.port, 4, {topic: [_Partition(partition=0, current_leader_epoch=0, leader_epoch=3)]},
                  replica_id=replica_id)
    # an epoch above every known one: no error, an undefined epoch and offset
    assert answers == {(topic, 0): (0, -1, -1)}


def poll_message(consumer: Consumer, timeout: float = 15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            return message
    raise AssertionError("no message")


@pytest.mark.parametrize("reset", ["earliest", "error"])
def test_librdkafka_validates_a_seek_position_by_its_leader_epoch(broker, reset):
    topic = make_topic(broker)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"epochs-{reset}",
                         "enable.auto.commit": False, "auto.offset.reset": reset})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        first = poll_message(consumer)
        assert (first.offset(), first.leader_epoch()) == (0, 0)
        # a position with an epoch is validated before fetching: epoch 0 ends at 5, so 3 is valid
        consumer.seek(TopicPartition(topic, 0, 3, leader_epoch=0))
        message = poll_message(consumer)
        assert message.error() is None and (message.offset(), message.value()) == (3, b"v3")
        # 8 lies past where epoch 0 ends: truncation, which librdkafka only learns from this API
        consumer.seek(TopicPartition(topic, 0, 8, leader_epoch=0))
        if reset == "error":
            message = poll_message(consumer)
            assert message.error() is not None and "truncation detected at offset 8" in message.error().str()
            assert message.error().code() == KafkaError._AUTO_OFFSET_RESET
        else:
            # librdkafka seeks to the end of epoch 0 (not to the earliest offset, which an
            # OFFSET_OUT_OF_RANGE fetch at 8 would have reset to) and reads what comes next
            time.sleep(1)
            producer = Producer({"bootstrap.servers": broker.bootstrap})
            producer.produce(topic, b"late")
            assert producer.flush(10) == 0
            message = poll_message(consumer)
            assert message.error() is None and (message.offset(), message.value()) == (5, b"late")
    finally:
        consumer.close()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def leader_and_epoch(port: int, topic: str) -> tuple[int, int]:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                              allow_auto_topic_creation=False)
    (partition,) = exchange(port, request, MetadataResponse, 9).topics[0].partitions
    return partition.leader_id, partition.leader_epoch


@pytest.mark.slow
def test_after_a_leader_change_the_new_leader_answers_where_the_old_epoch_ended(tmp_path):
    from tests.cluster.brokers import Cluster
    cluster = Cluster(tmp_path).start()
    try:
        cluster.create_topic("moves", 1)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(10):
            producer.produce("moves", b"%d" % i)
        assert producer.flush(30) == 0
        old_leader = cluster.leader_of("moves", 0)
        port = cluster.brokers[old_leader].port
        assert leader_and_epoch(port, "moves") == (old_leader, 0)
        assert ask(port, 4, {"moves": [_Partition(partition=0, current_leader_epoch=0, leader_epoch=0)]}) \
            == {("moves", 0): (0, 0, 10)}
        for follower in (node for node in cluster.brokers if node != old_leader):
            for replica_id in (-1, old_leader):  # a consumer or a replica: only the leader answers
                assert ask(cluster.brokers[follower].port, 4, {"moves": [_Partition(partition=0, leader_epoch=0)]},
                           replica_id=replica_id) == {("moves", 0): (NOT_LEADER_OR_FOLLOWER, -1, -1)}

        lines = _Lines()
        logger = logging.getLogger(f"rdkafka-{uuid.uuid4().hex[:6]}")
        logger.addHandler(lines)
        logger.setLevel(logging.DEBUG)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "moves", "debug": "fetch",
                             "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 500,
                             "logger": logger})
        consumer.assign([TopicPartition("moves", 0, 0)])
        read = [poll_message(consumer, 30) for _ in range(10)]
        assert [(m.offset(), m.leader_epoch()) for m in read] == [(i, 0) for i in range(10)]

        cluster.brokers[old_leader].stop()
        states = cluster.wait_for("moves", lambda s: s.get(0, (-1,))[0] not in (-1, old_leader))
        new_leader = states[0][0]
        port = cluster.brokers[new_leader].port
        _, epoch = leader_and_epoch(port, "moves")
        assert epoch > 0
        for i in range(10, 15):
            producer.produce("moves", b"%d" % i)
        assert producer.flush(60) == 0

        def on_new_leader(leader_epoch: int, current: int = epoch):
            return ask(port, 4, {"moves": [_Partition(partition=0, current_leader_epoch=current,
                                                      leader_epoch=leader_epoch)]})[("moves", 0)]
        assert on_new_leader(0) == (0, 0, 10)  # epoch 0 ended where the new leader's epoch began
        assert on_new_leader(epoch) == (0, epoch, 15)  # the current epoch ends at the log end offset
        assert on_new_leader(0, current=0) == (FENCED_LEADER_EPOCH, -1, -1)
        assert on_new_leader(0, current=epoch + 1) == (UNKNOWN_LEADER_EPOCH, -1, -1)

        # librdkafka saw the epoch go up in the metadata and validated offset 10 (epoch 0) first
        later = [poll_message(consumer, 60) for _ in range(5)]
        assert [(m.error(), m.offset(), m.leader_epoch()) for m in later] == [(None, i, epoch) for i in range(10, 15)]
        consumer.close()
        assert any("validation succeeded: broker end offset 10 (offset leader epoch 0)" in line
                   for line in lines.lines), "\n".join(line for line in lines.lines if "VALID" in line.upper())
    finally:
        cluster.stop()
