"""`gregor console-producer` and `gregor console-consumer` through their command lines,
with confluent-kafka as the independent reader and writer."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer as OracleConsumer
from confluent_kafka import Producer as OracleProducer

from tests.cli.conftest import gregor, in_process, one_error_line


@pytest.fixture
def topic(bootstrap) -> str:
    name = f"console-{uuid.uuid4().hex[:8]}"
    assert gregor("topics", *bootstrap, "--create", "--topic", name, "--partitions", "1").returncode == 0
    return name


def oracle_read(broker, topic: str, count: int) -> list:
    consumer = OracleConsumer({"bootstrap.servers": broker.bootstrap, "group.id": f"oracle-{uuid.uuid4().hex}",
                               "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    messages = []
    for _ in range(100):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            messages.append(message)
        if len(messages) >= count:
            break
    consumer.close()
    return messages


def test_producer_parses_keys_and_headers(broker, bootstrap, topic):
    lines = "h1:v1,h2\tk1=v1\n\tk2=NULL\nsrc:x\tNULL=v3\n"
    produced = gregor("console-producer", *bootstrap, "--topic", topic, "--sync",
                      "--property", "parse.key=true", "--property", "key.separator==",
                      "--property", "parse.headers=true", "--property", "null.marker=NULL",
                      "--compression-codec", "zstd", "--producer-property", "linger.ms=0", stdin=lines)
    assert produced.returncode == 0, produced.stderr
    messages = oracle_read(broker, topic, 3)
    assert [(m.key(), m.value()) for m in messages] == [(b"k1", b"v1"), (b"k2", None), (None, b"v3")]
    assert messages[0].headers() == [("h1", b"v1"), ("h2", None)]
    assert messages[2].headers() == [("src", b"x")]


def test_producer_refuses_a_line_without_separator(bootstrap, topic):
    result = gregor("console-producer", *bootstrap, "--topic", topic, "--property", "parse.key=true",
                    stdin="no separator here\n")
    assert result.returncode == 1
    assert "No key separator found on line number 1" in one_error_line(result)


def test_consumer_prints_with_formatter_properties(broker, bootstrap, topic):
    producer = OracleProducer({"bootstrap.servers": broker.bootstrap})
    for index in range(5):
        producer.produce(topic, value=f"value-{index}".encode(), key=f"key-{index}".encode(),
                         headers=[("n", str(index).encode())], timestamp=1700000000000 + index)
    producer.flush(10)
    result = gregor("console-consumer", *bootstrap, "--topic", topic, "--from-beginning", "--max-messages", "3",
                    "--property", "print.key=true", "--property", "print.offset=true",
                    "--property", "print.partition=true", "--property", "print.timestamp=true",
                    "--property", "print.headers=true", "--property", "key.separator=|")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"CreateTime:{1700000000000 + i}|Partition:0|Offset:{i}|n:{i}|key-{i}|value-{i}" for i in range(3)]
    assert result.stderr.strip().splitlines()[-1] == "Processed a total of 3 messages"

    from_offset = gregor("console-consumer", *bootstrap, "--topic", topic, "--partition", "0", "--offset", "3",
                         "--timeout-ms", "1500")
    assert from_offset.returncode == 0, from_offset.stderr
    assert from_offset.stdout.splitlines() == ["value-3", "value-4"]
    assert "Processed a total of 2 messages" in from_offset.stderr


def test_round_trip_through_both_tools(bootstrap, topic):
    produced = gregor("console-producer", *bootstrap, "--topic", topic, stdin="one\ntwo\r\nthree\n")
    assert produced.returncode == 0, produced.stderr
    consumed = gregor("console-consumer", *bootstrap, "--topic", topic, "--from-beginning",
                      "--max-messages", "3", "--isolation-level", "read_committed")
    assert consumed.stdout.splitlines() == ["one", "two", "three"]


def test_consumer_errors(bootstrap, topic):
    missing = gregor("console-consumer", *bootstrap, "--topic", f"absent-{uuid.uuid4().hex[:6]}",
                     "--timeout-ms", "500")
    assert missing.returncode == 1
    assert "does not exist" in one_error_line(missing)
    no_partition = gregor("console-consumer", *bootstrap, "--topic", topic, "--partition", "5")
    assert no_partition.returncode == 1
    assert "has no partition 5" in one_error_line(no_partition)


@pytest.mark.parametrize("tool, args, message", [
    ("console-consumer", ["--offset", "3", "--topic", "t"], "--offset needs --partition"),
    ("console-consumer", ["--topic", "t", "--partition", "0", "--offset", "soon"], "--offset must be"),
    ("console-consumer", ["--topic", "t", "--include", "t.*"], "exactly one of --topic and --include"),
    ("console-consumer", ["--topic", "t", "--property", "print.everything=true"], "unknown --property"),
    ("console-consumer", ["--topic", "t", "--formatter", "com.example.Fancy"], "DefaultMessageFormatter"),
    ("console-producer", [], "needs --topic"),
    ("console-producer", ["--topic", "t", "--compression-codec", "brotli"], "invalid choice"),
    ("console-producer", ["--topic", "t", "--property", "print.key=true"], "unknown --property"),
])
def test_wrong_arguments(capsys, tool, args, message):
    result = in_process(capsys, tool, "--bootstrap-server", "127.0.0.1:9", *args)
    assert result.returncode == 2
    assert message in one_error_line(result)


def test_unreachable_broker(unreachable):
    produced = gregor("console-producer", *unreachable, "--topic", "t", "--max-block-ms", "1500", stdin="x\n")
    assert produced.returncode == 1
    assert "cannot reach the cluster" in one_error_line(produced)
    consumed = gregor("console-consumer", *unreachable, "--topic", "t",
                      "--consumer-property", "default.api.timeout.ms=1500")
    assert consumed.returncode == 1
    assert "cannot reach the cluster" in one_error_line(consumed)
