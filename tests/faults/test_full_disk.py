"""A broker whose log directory fills up, in a real cluster: two brokers, the first with its disk
made to fill by gregor.storage.disk_full (GREGOR_TEST_DISK_FULL, unprivileged; its docstring says
why not RLIMIT_FSIZE), its metadata log in a directory of its own.

While the disk is full, librdkafka's produce to a partition of the full broker fails with
KAFKA_STORAGE_ERROR, the other broker's partition takes writes, and the full broker still serves
reads. An idempotent producer writing all along has its batches retried until space returns; then
writes carry on, and every acknowledged record reads back once, in order, and nothing refused does.
Kafka would take the log directory offline instead (see docs/faults.md)."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Producer,
    TopicPartition,
)

from gregor.storage.disk_full import ENVIRONMENT_VARIABLE
from tools.faults.cluster import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(300)]

TOPIC = "disk"


class Sender:
    """A producer whose delivery reports are kept: value -> offset, or value -> error name."""

    def __init__(self, bootstrap: str, **config: object) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3, **config})
        self.acknowledged: dict[int, tuple[int, int]] = {}  # value -> (partition, offset)
        self.refused: dict[int, str] = {}

    def _delivered(self, error: KafkaError | None, message) -> None:
        value = int(message.value())
        if error is None:
            self.acknowledged[value] = (message.partition(), message.offset())
        else:
            self.refused[value] = error.name()

    def send(self, partition: int, values: range, flush: bool = True) -> None:
        for value in values:
            self.producer.produce(TOPIC, str(value).encode(), partition=partition, on_delivery=self._delivered)
            self.producer.poll(0)
        if flush:
            assert self.producer.flush(90) == 0


def _read(bootstrap: str, partition: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "full-disk-unused", "log_level": 3,
                         "enable.auto.commit": False})
    end = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=30)[1]
    consumer.assign([TopicPartition(TOPIC, partition, OFFSET_BEGINNING)])
    values: list[int] = []
    position = 0
    deadline = time.monotonic() + 60
    try:
        while position < end and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                assert message.error() is None, message.error()
                values.append(int(message.value()))
                position = message.offset() + 1
    finally:
        consumer.close()
    assert position == end, f"read to {position} of {end}"
    return values


def test_a_full_log_dir_refuses_writes_with_kafka_storage_error_and_loses_nothing_when_space_returns(tmp_path):
    control = tmp_path / "disk-full"
    cluster = Cluster(str(tmp_path / "cluster"), brokers=2)
    full, other = cluster.brokers[2], cluster.brokers[3]
    full.env = {ENVIRONMENT_VARIABLE: str(control)}
    full.overrides["metadata.log.dir"] = os.path.join(full.directory, "metadata")
    try:
        cluster.start()
        cluster.create_topic(TOPIC, 4, 1)
        leaders = {leader: partition for partition, (leader, _) in sorted(cluster.partitions(TOPIC).items())}
        on_full, on_other = leaders[full.node_id], leaders[other.node_id]
        steady = Sender(cluster.bootstrap, **{"enable.idempotence": True, "acks": "all",
                                              "message.timeout.ms": 120000, "retry.backoff.ms": 200})
        steady.send(on_full, range(100))
        assert len(steady.acknowledged) == 100

        control.write_text(f"{full.data_dir}\n3000\n")  # 3000 more bytes, then ENOSPC: mid-batch
        steady.send(on_full, range(100, 400), flush=False)  # retried until space returns
        bare = Sender(cluster.bootstrap, **{"enable.idempotence": False, "acks": "all", "retries": 0})
        deadline = time.monotonic() + 30
        while "KAFKA_STORAGE_ERROR" not in bare.refused.values() and time.monotonic() < deadline:
            bare.send(on_full, range(10000 + len(bare.refused) * 10, 10010 + len(bare.refused) * 10))
        assert "KAFKA_STORAGE_ERROR" in bare.refused.values(), bare.refused
        assert set(bare.refused.values()) == {"KAFKA_STORAGE_ERROR"}
        assert "No space left on device" in full.tail(50000)

        others = Sender(cluster.bootstrap, **{"enable.idempotence": True, "acks": "all"})
        others.send(on_other, range(20000, 20100))
        assert len(others.acknowledged) == 100  # the other broker is not affected
        assert _read(cluster.bootstrap, on_full)[:100] == list(range(100))  # reads still served
        assert len(steady.acknowledged) < 400  # the steady producer is held up

        control.unlink()  # space returns
        steady.send(on_full, range(400, 500))
        assert len(steady.acknowledged) == 500 and not steady.refused, steady.refused
        bare.send(on_full, range(30000, 30010))
        assert all(value in bare.acknowledged for value in range(30000, 30010))

        read = _read(cluster.bootstrap, on_full)
        written = [value for value in read if value < 10000]
        assert written == list(range(500))  # each acknowledged once, in order
        assert not set(bare.refused) & set(read)  # nothing refused was written
        assert {value for value in read if value >= 10000} == set(bare.acknowledged)
        assert sorted(_read(cluster.bootstrap, on_other)) == list(range(20000, 20100))
    finally:
        cluster.stop()
