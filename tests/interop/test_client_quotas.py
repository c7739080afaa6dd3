"""Client quotas end to end: a quota set with `gregor configs` (kafka-configs.sh's flags) holds a
librdkafka producer to its byte rate, with the throttle time reported to it, while another client
id is not throttled at all; a default client-id consumer quota holds a consumer to its rate.

Wall-clock time is asserted only as a lower bound (the producer cannot have pushed its bytes
faster than the quota allows plus 20 %), which a loaded machine cannot break; the quota's
accuracy on virtual time is tested in tests/unit/broker/test_client_quotas.py.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.interop

QUOTA = 50_000  # bytes per second
RECORDS, VALUE = 250, b"x" * 1000


def _produce(bootstrap: str, client_id: str) -> tuple[float, list[int]]:
    """Seconds to produce RECORDS values as fast as librdkafka may (in requests of about 16 kB: an
    answer is sent at once, and the connection muted after it, KIP-219), and the throttle times it
    saw."""
    from confluent_kafka import Producer
    throttles: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "batch.size": 16384,
                         "throttle_cb": lambda event: throttles.append(int(event.throttle_time * 1000))})
    started = time.monotonic()
    for _ in range(RECORDS):
        producer.produce("quota-t", VALUE)
        producer.poll(0)
    assert producer.flush(60) == 0
    elapsed = time.monotonic() - started
    producer.poll(0)
    return elapsed, [t for t in throttles if t > 0]


@pytest.mark.slow
def test_a_producer_over_its_byte_rate_is_throttled_and_others_are_not(broker_factory):
    broker = broker_factory({"quota.window.num": "2", "quota.window.size.seconds": "1"})
    subprocess.run([sys.executable, "-m", "gregor.cli.main", "topics", "--bootstrap-server", broker.bootstrap,
                    "--create", "--topic", "quota-t"], check=True, capture_output=True, timeout=60)
    configured = subprocess.run(
        [sys.executable, "-m", "gregor.cli.main", "configs", "--bootstrap-server", broker.bootstrap, "--alter",
         "--entity-type", "clients", "--entity-name", "throttled", "--add-config", f"producer_byte_rate={QUOTA}"],
        capture_output=True, text=True, timeout=60)
    assert configured.returncode == 0, configured.stderr
    assert "Completed updating config for client-id 'throttled'." in configured.stdout
    described = subprocess.run(
        [sys.executable, "-m", "gregor.cli.main", "configs", "--bootstrap-server", broker.bootstrap, "--describe",
         "--client", "throttled"], capture_output=True, text=True, timeout=60)
    assert f"Quota configs for client-id 'throttled' are producer_byte_rate={float(QUOTA)}" in described.stdout
    every_client = subprocess.run(
        [sys.executable, "-m", "gregor.cli.main", "configs", "--bootstrap-server", broker.bootstrap, "--describe",
         "--entity-type", "clients"], capture_output=True, text=True, timeout=60)
    assert every_client.stdout == described.stdout

    elapsed, throttles = _produce(broker.bootstrap, "throttled")
    sent = RECORDS * len(VALUE)
    burst = QUOTA  # what the rate's shortest window (one sample of two) lets through before the first throttle
    assert elapsed >= (sent - burst) / (QUOTA * 1.2), f"{sent} bytes in {elapsed:.2f} s"
    assert throttles, "librdkafka saw no throttle_time_ms"
    # the broker's throttles add up to the time the quota kept the producer waiting
    assert sum(throttles) / 1000 >= (sent - burst) / QUOTA * 0.5

    _, free_throttles = _produce(broker.bootstrap, "free")
    assert free_throttles == []

    configured = subprocess.run(
        [sys.executable, "-m", "gregor.cli.main", "configs", "--bootstrap-server", broker.bootstrap, "--alter",
         "--entity-type", "clients", "--entity-default", "--add-config", f"consumer_byte_rate={QUOTA * 2}"],
        capture_output=True, text=True, timeout=60)
    assert configured.returncode == 0, configured.stderr
    elapsed, throttles = _consume(broker.bootstrap, RECORDS)
    read = RECORDS * len(VALUE)
    assert elapsed >= (read - 2 * QUOTA) / (2 * QUOTA * 1.2), f"{read} bytes read in {elapsed:.2f} s"
    assert throttles, "the consumer saw no throttle_time_ms"


def _consume(bootstrap: str, records: int) -> tuple[float, list[int]]:
    """Seconds to read `records` records from the start, and the throttle times seen."""
    from confluent_kafka import Consumer
    throttles: list[int] = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "quota-readers", "client.id": "reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "throttle_cb": lambda event: throttles.append(int(event.throttle_time * 1000))})
    consumer.subscribe(["quota-t"])
    started, read = time.monotonic(), 0
    try:
        while read < records and time.monotonic() - started < 60:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read += 1
    finally:
        consumer.close()
    assert read == records
    return time.monotonic() - started, [t for t in throttles if t > 0]
