"""A damaged follower re-fetches: real brokers (RF=3, min.insync.replicas=2), one follower stopped,
its log damaged on disk, restarted.

- A bit flipped in an old segment after a kill -9: recovery re-reads every segment from the
  checkpointed recovery point (the checkpoint interval is an hour here, so it is 0, as it is
  after a crash before the first checkpoint), finds the batch by its CRC, cuts the log there,
  and the follower fetches the rest from the leader again.
- An index deleted after a clean stop: the segment is re-read and its index rebuilt.

Either way the follower rejoins the ISR with a log byte for byte the leader's, and (for the flipped
bit) every acknowledged record is read back from it alone, the two other brokers stopped."""

from __future__ import annotations

import os
import struct
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from gregor.storage.checkpoint import RECOVERY_POINT_CHECKPOINT, read_checkpoint
from tools.faults.cluster import Cluster, Node

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(300)]

BATCH_HEADER = 61  # base offset 8, length 4, then the v2 header up to the record count


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(str(tmp_path_factory.mktemp("damaged")), brokers=3,
                      overrides={"log.flush.offset.checkpoint.interval.ms": "3600000"})
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _produce(cluster: Cluster, topic: str, values: range) -> dict[int, int]:
    """acks=all, small batches (so a segment holds several); value -> offset of the acknowledged."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 2, "batch.size": 2000, "log_level": 3})
    acknowledged: dict[int, int] = {}

    def delivered(error, message) -> None:
        if error is None:
            acknowledged[int(message.value()[:8])] = message.offset()

    for value in values:
        producer.produce(topic, f"{value:08d}".encode() + b"." * 100, partition=0, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert len(acknowledged) == len(values)
    return acknowledged


def _follower(cluster: Cluster, topic: str) -> tuple[Node, Node]:
    leader, isr = cluster.partitions(topic)[0]
    return cluster.brokers[next(b for b in isr if b != leader)], cluster.brokers[leader]


def _segments(node: Node, topic: str) -> list[str]:
    directory = os.path.join(node.data_dir, f"{topic}-0")
    return sorted(os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".log"))


def _log_bytes(node: Node, topic: str) -> bytes:
    """The partition's log as one byte string (segment boundaries may differ between replicas)."""
    data = b""
    for path in _segments(node, topic):
        with open(path, "rb") as segment:
            data += segment.read()
    return data


def _same_log(follower: Node, leader: Node, topic: str, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while _log_bytes(follower, topic) != _log_bytes(leader, topic):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _read_all(cluster: Cluster, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "damaged-unused", "log_level": 3,
                         "enable.auto.commit": False, "check.crcs": True})
    end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    read: dict[int, int] = {}
    deadline = time.monotonic() + 60
    try:
        while (max(read.values(), default=-1) + 1 < end) and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                assert message.error() is None, message.error()
                read[int(message.value()[:8])] = message.offset()
    finally:
        consumer.close()
    return read


def test_a_follower_with_a_flipped_bit_cuts_its_log_at_the_crc_and_fetches_again(cluster):
    topic = "flipped"
    cluster.create_topic(topic, 1, 3, **{"min.insync.replicas": "2", "segment.bytes": "8192"})
    acknowledged = _produce(cluster, topic, range(300))
    follower, leader = _follower(cluster, topic)
    follower.kill9()
    recovery_point = read_checkpoint(os.path.join(follower.data_dir, RECOVERY_POINT_CHECKPOINT)).get((topic, 0), 0)
    segments = _segments(follower, topic)
    # an old segment (not the active one) that recovery re-reads: based at or past the recovery point
    damaged = next(path for path in segments[:-1] if int(os.path.basename(path)[:-4]) >= recovery_point
                   and os.path.basename(path) != os.path.basename(segments[0]))
    with open(damaged, "r+b") as segment:
        data = bytearray(segment.read())
        second = 12 + struct.unpack_from(">i", data, 8)[0]  # the segment's second batch
        assert second + BATCH_HEADER + 20 < len(data), "the segment holds one batch"
        cut_at = struct.unpack_from(">q", data, second)[0]
        data[second + BATCH_HEADER + 10] ^= 0x10  # inside its records: only the CRC can tell
        segment.seek(0)
        segment.write(data)
    acknowledged |= _produce(cluster, topic, range(300, 400))  # while the follower is down
    follower.start()
    cluster.wait_for_full_isr(topic, 3)
    assert f"recovered {topic}-0: truncated" in follower.tail(20000), follower.tail()
    assert _same_log(follower, leader, topic), "the follower's log differs from the leader's"
    assert cut_at in acknowledged.values()  # the records recovery cut were acknowledged ones
    for other in cluster.brokers.values():
        if other is not follower:
            other.stop()
    try:
        cluster.wait_for(topic, lambda states: states[0][0] == follower.node_id)
        assert _read_all(cluster, topic) == acknowledged
    finally:
        for other in cluster.brokers.values():
            if not other.running:
                other.start()
        cluster.wait_for_brokers(3)


def test_a_follower_with_a_deleted_index_rebuilds_it_and_rejoins(cluster):
    topic = "indexless"
    cluster.create_topic(topic, 1, 3, **{"min.insync.replicas": "2", "segment.bytes": "8192"})
    acknowledged = _produce(cluster, topic, range(1000, 1300))
    follower, leader = _follower(cluster, topic)
    follower.stop()
    index = _segments(follower, topic)[1][:-4] + ".index"
    os.remove(index)
    acknowledged |= _produce(cluster, topic, range(1300, 1400))
    follower.start()
    cluster.wait_for_full_isr(topic, 3)
    assert os.path.getsize(index) > 0
    assert _same_log(follower, leader, topic), "the follower's log differs from the leader's"
    assert _read_all(cluster, topic) == acknowledged
