"""SIGTERM stops a `gregor server` process gracefully: it stops taking requests, answers those
already read (a long-poll fetch gets its answer, not a reset connection), flushes, and leaves the
clean-shutdown marker, so the next start loads the logs without recovery and loses nothing."""

from __future__ import annotations

import os
import signal
import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages import FetchRequest, FetchResponse
from gregor.protocol.primitives import Reader

pytestmark = pytest.mark.interop
TOPIC = "shutdown"


def test_sigterm_answers_a_parked_fetch_then_stops_cleanly(broker_factory):
    broker = broker_factory()
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(100):
        producer.produce(TOPIC, b"record-%d" % i)
    assert producer.flush(10) == 0

    request = FetchRequest(replica_id=-1, max_wait_ms=2000, min_bytes=1 << 20, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=100, partition_max_bytes=1 << 20)])])
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(encode_request(42, "shutdown-test", request, 4))
        time.sleep(0.5)  # the fetch is parked at the broker, waiting for data that never comes
        broker.proc.send_signal(signal.SIGTERM)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = memoryview(sock.recv(size, socket.MSG_WAITALL))
    header, body = decode_response_header(frame, FetchRequest.API_KEY, 4)
    response = FetchResponse.decode(Reader(frame, body), 4)
    assert header.correlation_id == 42
    assert response.responses[0].partitions[0].high_watermark == 100
    assert broker.proc.wait(15) == 0
    assert os.path.exists(os.path.join(broker.data_dir, ".kafka_cleanshutdown"))

    broker.restart()
    assert "previous shutdown was clean" in broker.output()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "shutdown-check",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    values = []
    while len(values) < 100:
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        values.append(message.value())
    consumer.close()
    assert values == [b"record-%d" % i for i in range(100)]
