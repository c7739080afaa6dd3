"""A second `gregor server` on a data directory that a live broker holds, or on a busy port, exits
with one line and changes no byte of the directory; a listener Gregor cannot secure is refused
before anything starts. The records the first broker acknowledged stay readable."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.broker_process import BrokerProcess, free_port

pytestmark = pytest.mark.interop


def checksums(directory: str) -> dict[str, str]:
    """Every file under the directory with the SHA-256 of its bytes."""
    sums = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                sums[os.path.relpath(path, directory)] = hashlib.sha256(handle.read()).hexdigest()
    return sums


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    for _ in range(100):
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            values.append(message.value())
        if len(values) >= count:
            break
    consumer.close()
    return values


def run_server(data_dir: str, port: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gregor.cli.main", "server",
                           "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                           "--override", f"log.dirs={data_dir}"], capture_output=True, text=True, timeout=60)


def test_a_second_broker_on_a_locked_directory_refuses_and_touches_nothing(tmp_path):
    data = str(tmp_path / "data")
    first = BrokerProcess(data)
    first.start()
    try:
        produce(first.bootstrap, "kept", [b"a", b"b", b"c"])
        first.proc.send_signal(signal.SIGSTOP)  # nothing changes the directory but the second broker
        try:
            before = checksums(data)
            result = run_server(data, free_port())
            assert checksums(data) == before
        finally:
            first.proc.send_signal(signal.SIGCONT)
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [
            f"gregor server: failed to acquire lock on {os.path.join(data, '.lock')}: another broker "
            f"(pid {first.proc.pid}) is using the data directory {data}"]
        produce(first.bootstrap, "kept", [b"d"])
        assert consume(first.bootstrap, "kept", 4) == [b"a", b"b", b"c", b"d"]
    finally:
        first.stop()


def test_a_broker_on_a_busy_port_leaves_the_data_directory_untouched(tmp_path):
    data = str(tmp_path / "data")
    first = BrokerProcess(data)
    first.start()
    produce(first.bootstrap, "kept", [b"a"])
    first.stop()
    before = checksums(data)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = run_server(data, busy.getsockname()[1])
    assert result.returncode == 1
    assert "address already in use" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert checksums(data) == before


def test_a_sasl_ssl_listener_without_its_key_is_refused_not_served_as_plaintext(tmp_path):
    port = free_port()
    result = subprocess.run([sys.executable, "-m", "gregor.cli.main", "server",
                             "--override", f"listeners=SASL_SSL://127.0.0.1:{port}",
                             "--override", f"log.dirs={tmp_path / 'data'}"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "gregor server: listener SASL_SSL: ssl.keystore.location: a TLS listener needs its key and certificate "
        "(ssl.keystore.type=PEM with ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key)"]
    assert not os.path.exists(tmp_path / "data")
