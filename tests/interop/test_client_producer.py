"""Gregor's Producer with real processes: kcat reads what it wrote, idempotent sends survive a
broker killed -9 or stopped mid-stream without duplicates or gaps, a broker that stops answering expires
records after delivery.timeout.ms, an unreachable cluster fails within max.block.ms."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentPartition

from gregor.client import KafkaException
from gregor.client.producer import Producer
from tests.broker_process import free_port

pytestmark = pytest.mark.interop


def read_values(bootstrap: str, topic: str, partition: int, expected: int, timeout: float = 30) -> list[bytes]:
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": f"rb-{uuid.uuid4().hex[:6]}",
                                  "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([ConfluentPartition(topic, partition, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is None:
                values.append(message.value())
            elif len(values) >= expected:
                break
    finally:
        consumer.close()
    return values


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (scripts/setup.sh installs it)")
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_reads_what_the_producer_wrote(broker, codec):
    topic = f"kcat-{uuid.uuid4().hex[:8]}"
    with Producer({"bootstrap.servers": broker.bootstrap}, compression_type=codec) as producer:
        for index in range(30):
            producer.send(topic, b"value-%d" % index, key=b"key-%d" % index, partition=0,
                          timestamp=1_600_000_000_000 + index, headers={"trace": b"t%d" % index})
        producer.flush(20)
    output = subprocess.run(
        ["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
         "-f", "%k|%s|%h|%o|%T\n"], capture_output=True, timeout=30, check=True).stdout.decode()
    assert output.splitlines() == [f"key-{i}|value-{i}|trace=t{i}|{i}|{1_600_000_000_000 + i}" for i in range(30)]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill9", "stop"])
def test_idempotent_sends_survive_a_broker_restart_mid_stream(broker_factory, how):
    broker = broker_factory()
    topic = f"idem-{uuid.uuid4().hex[:8]}"
    total = 6000
    producer = Producer({"bootstrap.servers": broker.bootstrap}, linger_ms=2, batch_size=2048,
                        delivery_timeout_ms=90_000, request_timeout_ms=3000, reconnect_backoff_max_ms=200)
    try:
        futures = [producer.send(topic, b"%d" % index, partition=0) for index in range(total // 2)]
        futures[total // 8].get(20)  # some batches acknowledged, later ones in flight or queued
        getattr(broker, how)()
        futures += [producer.send(topic, b"%d" % index, partition=0) for index in range(total // 2, total)]
        broker.restart()
        producer.flush(90)
        assert [future.exception(0) for future in futures if future.exception(0) is not None] == []
        offsets = [future.get(0).offset for future in futures]
        assert offsets == list(range(total))
    finally:
        producer.close(10)
    with Producer({"bootstrap.servers": broker.bootstrap}) as newcomer:  # a reused producer id would clash
        assert newcomer.send(topic, b"newcomer", partition=0).get(20).offset == total
    values = read_values(broker.bootstrap, topic, 0, total + 1)
    assert values == [b"%d" % index for index in range(total)] + [b"newcomer"]


def test_records_expire_after_delivery_timeout_when_the_broker_stops_answering(broker_factory):
    broker = broker_factory()
    topic = f"stall-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap}, linger_ms=0, request_timeout_ms=800,
                        delivery_timeout_ms=1500, retry_backoff_ms=50)
    try:
        producer.send(topic, b"first", partition=0).get(20)
        os.kill(broker.proc.pid, signal.SIGSTOP)
        try:
            future = producer.send(topic, b"stalled", partition=0)
            error = future.exception(30)
        finally:
            os.kill(broker.proc.pid, signal.SIGCONT)
        assert error is not None and error.name == "_MSG_TIMED_OUT"
        assert "delivery.timeout.ms" in str(error)
    finally:
        producer.close(10)


def test_an_unreachable_cluster_fails_within_max_block_ms():
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}"}, max_block_ms=1000)
    try:
        with pytest.raises(KafkaException) as raised:
            producer.send("anything", b"x")
        assert raised.value.name == "_TIMED_OUT"
        assert "max.block.ms" in str(raised.value)
    finally:
        producer.close(5)
