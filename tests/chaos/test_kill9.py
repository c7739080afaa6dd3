"""kill -9 during a steady acks=1 stream, restart: every acknowledged record is readable."""

from __future__ import annotations

import os
import threading
import time

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.interop]


def test_acknowledged_records_survive_kill9_and_recovery(broker_factory):
    from confluent_kafka import Consumer, Producer, TopicPartition
    broker = broker_factory({"log.segment.bytes": "16384"})  # 3,000 records (~60 KB) span several segments
    acked: list[int] = []
    stop = threading.Event()

    def produce():
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": 1, "linger.ms": 2,
                             "enable.idempotence": False, "message.timeout.ms": 3000})
        i = 0
        while not stop.is_set():
            producer.produce("chaos", value=f"record-{i}".encode(), partition=0,
                             on_delivery=lambda err, msg: acked.append(int(msg.value()[7:])) if err is None else None)
            producer.poll(0)
            i += 1
            if i % 200 == 0:
                time.sleep(0.01)
        producer.flush(5)

    thread = threading.Thread(target=produce)
    thread.start()
    deadline = time.monotonic() + 30
    while len(acked) < 3000 and time.monotonic() < deadline:
        time.sleep(0.05)
    broker.kill9()
    stop.set()
    thread.join(20)
    assert len(acked) >= 3000
    broker.restart()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "c", "enable.auto.commit": False})
    consumer.assign([TopicPartition("chaos", 0, 0)])
    seen: list[tuple[int, int]] = []
    idle = time.monotonic()
    while time.monotonic() - idle < 5:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append((message.offset(), int(message.value()[7:])))
            idle = time.monotonic()
    offsets = [offset for offset, _ in seen]
    assert offsets == list(range(len(offsets))), "offsets must be contiguous from 0"
    values = {value for _, value in seen}
    assert set(acked) <= values, f"{len(set(acked) - values)} acknowledged records lost"
    for probe in range(0, len(seen), max(1, len(seen) // 25)):
        consumer.seek(TopicPartition("chaos", 0, probe))
        message = consumer.poll(5)
        assert message is not None and message.offset() == probe
    consumer.close()
    segments = [n for n in os.listdir(os.path.join(broker.data_dir, "chaos-0")) if n.endswith(".log")]
    assert len(segments) > 1


def test_retention_deletes_old_segments_and_advances_the_log_start(broker_factory):
    from confluent_kafka import Consumer, Producer, TopicPartition
    broker = broker_factory({"log.segment.bytes": "20000", "log.retention.bytes": "60000",
                             "log.retention.check.interval.ms": "200"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                         "batch.size": 10000})
    for i in range(2000):
        producer.produce("retained", value=b"x" * 200, partition=0)
        if i % 100 == 0:
            producer.flush(10)
    producer.flush(10)
    partition_dir = os.path.join(broker.data_dir, "retained-0")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "r"})
    deadline = time.monotonic() + 15
    low = 0
    while time.monotonic() < deadline:
        low, high = consumer.get_watermark_offsets(TopicPartition("retained", 0), timeout=5)
        if low > 0:
            break
        time.sleep(0.2)
    assert low > 0 and high == 2000
    # Retention goes on deleting while the test looks: the segments are listed before the log
    # start is read again, so a deletion in between only moves the log start further on.
    names = sorted(n for n in os.listdir(partition_dir) if n.endswith(".log"))
    low, _ = consumer.get_watermark_offsets(TopicPartition("retained", 0), timeout=5)
    consumer.close()
    assert int(names[0][:-4]) <= low and "00000000000000000000.log" not in names
