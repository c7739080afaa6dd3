"""Transactions, partition side, on three broker processes (RF=3, min.insync.replicas=2): the
followers replicate transactional batches and markers into the same producer state and
`.txnindex`, so after the leader is killed the new leader answers the same last stable offset and
aborted transactions, completes the open transaction with a marker, and read_committed consumers
see exactly the committed records; the replicas' aborted-transaction indexes agree afterwards."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from gregor.protocol.error_codes import ErrorCode
from gregor.storage.log import Log, LogConfig
from gregor.storage.txn_index import AbortedTxn

from tests.cluster.brokers import Cluster
from tests.txn_wire import READ_COMMITTED, batch, fetch, init_producer_id, latest_offset, produce, write_markers

pytestmark = pytest.mark.slow

TOPIC = "txn-failover"


@pytest.fixture
def cluster(tmp_path):
    nodes = Cluster(tmp_path, overrides={"min.insync.replicas": "2"})
    yield nodes.start()
    nodes.stop()


def read_committed(bootstrap: str, count: int, seconds: float = 30) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + seconds
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.3)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


def aborted_on_disk(node) -> list[AbortedTxn]:
    log = Log(os.path.join(node.data_dir, f"{TOPIC}-0"), LogConfig(), int(time.time() * 1000))
    try:
        return [entry for segment in log.segments for entry in segment.txn_index.entries]
    finally:
        log.close()


def test_a_new_leader_keeps_the_last_stable_offset_and_the_aborted_transactions(cluster):
    cluster.create_topic(TOPIC, 1)
    leader = cluster.leader_of(TOPIC, 0)
    port = cluster.brokers[leader].port
    a, b = init_producer_id(port), init_producer_id(port)
    assert produce(port, TOPIC, 0, batch([b"a0", b"a1"], a, 0, 0)) == (ErrorCode.NONE, 0)
    assert produce(port, TOPIC, 0, batch([b"b0"], b, 0, 0)) == (ErrorCode.NONE, 2)
    assert write_markers(port, a, 0, True, {TOPIC: [0]}) == {(TOPIC, 0): ErrorCode.NONE}
    assert write_markers(port, b, 0, False, {TOPIC: [0]}) == {(TOPIC, 0): ErrorCode.NONE}
    assert produce(port, TOPIC, 0, batch([b"a2"], a, 0, 2)) == (ErrorCode.NONE, 5)  # acks=all: on every replica
    before = fetch(port, TOPIC, 0, 0, READ_COMMITTED)
    assert (before.high_watermark, before.last_stable_offset) == (6, 5)
    assert [(t.producer_id, t.first_offset) for t in before.aborted_transactions] == [(b, 2)]

    cluster.brokers[leader].kill9()
    states = cluster.wait_for(TOPIC, lambda s: s.get(0, (-1,))[0] not in (-1, leader))
    new_port = cluster.brokers[states[0][0]].port
    after = fetch(new_port, TOPIC, 0, 0, READ_COMMITTED)
    assert (after.error_code, after.last_stable_offset) == (ErrorCode.NONE, 5)
    assert [(t.producer_id, t.first_offset) for t in after.aborted_transactions] == [(b, 2)]
    assert read_committed(cluster.bootstrap, 3, seconds=4) == [b"a0", b"a1"], "a2's transaction is still open"

    deadline = time.monotonic() + 30
    while (answer := write_markers(new_port, a, 0, True, {TOPIC: [0]})) != {(TOPIC, 0): ErrorCode.NONE}:
        assert time.monotonic() < deadline, answer  # until the new leader's ISR allows acks=all
        time.sleep(0.3)
    assert latest_offset(new_port, TOPIC, 0, READ_COMMITTED) == 7
    assert read_committed(cluster.bootstrap, 3) == [b"a0", b"a1", b"a2"]

    cluster.brokers[leader].restart()
    cluster.wait_for_full_isr(TOPIC)
    deadline = time.monotonic() + 30
    while fetch(new_port, TOPIC, 0, 0, READ_COMMITTED).high_watermark < 7:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    cluster.stop()
    indexes = [aborted_on_disk(node) for node in cluster.brokers.values()]
    assert indexes[0] == indexes[1] == indexes[2] == [AbortedTxn(b, 2, 4, 5)]
