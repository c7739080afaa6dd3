"""A topic that does not exist on a broker that does not create topics on first use is reported as
such, with the ways to get it, not as an unreachable cluster: the producer's metadata wait ends
with the broker's answer (UNKNOWN_TOPIC_OR_PARTITION) chained as the timeout's cause."""

from __future__ import annotations

import uuid

import pytest

from gregor.cli.common import describe_kafka_error
from gregor.client import Producer
from gregor.client.errors import (
    ClientErrorCode, KafkaConnectionError, KafkaTimeoutError, UnknownTopicOrPartitionError, error_for,
)
from gregor.protocol.error_codes import ErrorCode
from tests.broker_process import BrokerProcess
from tests.cli.conftest import gregor, one_error_line


@pytest.fixture(scope="module")
def no_auto_create(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("no-auto-create") / "data"),
                            {"auto.create.topics.enable": "false"})
    process.start()
    yield process
    process.stop()


def absent() -> str:
    return f"absent-{uuid.uuid4().hex[:6]}"


def hint(topic: str) -> str:
    return (f"topic '{topic}' does not exist: create it with 'gregor topics --create --topic {topic}', "
            f"or let the broker create topics on first use (auto.create.topics.enable=true)")


def test_the_console_producer_says_the_topic_does_not_exist(no_auto_create):
    topic = absent()
    result = gregor("console-producer", "--bootstrap-server", no_auto_create.bootstrap, "--topic", topic,
                    "--max-block-ms", "1500", stdin="hello\n")
    assert result.returncode == 1
    line = one_error_line(result)
    assert line.startswith(f"gregor console-producer: error: {hint(topic)} (detail: ")
    assert "UNKNOWN_TOPIC_OR_PARTITION" in line and "cannot reach" not in line


def test_the_console_consumer_says_the_topic_does_not_exist(no_auto_create):
    topic = absent()
    result = gregor("console-consumer", "--bootstrap-server", no_auto_create.bootstrap, "--topic", topic,
                    "--timeout-ms", "500")
    assert result.returncode == 1
    assert one_error_line(result) == f"gregor console-consumer: error: {hint(topic)}"


def test_the_producers_timeout_carries_the_brokers_answer(no_auto_create):
    with Producer({"bootstrap.servers": no_auto_create.bootstrap, "max.block.ms": 1000}) as producer:
        with pytest.raises(KafkaTimeoutError) as raised:
            producer.send(absent(), b"hello")
    assert raised.value.code == ClientErrorCode._TIMED_OUT
    assert isinstance(raised.value.__cause__, UnknownTopicOrPartitionError)


def timeout_from(cause: Exception | None) -> KafkaTimeoutError:
    try:
        raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, "topic 't' not present in metadata") from cause
    except KafkaTimeoutError as error:
        return error


def test_an_unreachable_cluster_is_still_said_so():
    for cause in (None, KafkaConnectionError(ClientErrorCode._TRANSPORT, "connection refused")):
        line = describe_kafka_error(timeout_from(cause), "127.0.0.1:1", 500, "t")
        assert line.startswith("cannot reach the cluster at 127.0.0.1:1 within 500 ms")


def test_another_answer_of_the_cluster_is_not_called_unreachable():
    line = describe_kafka_error(timeout_from(error_for(ErrorCode.LEADER_NOT_AVAILABLE, "topic 't'")),
                                "127.0.0.1:1", 500, "t")
    assert line == "_TIMED_OUT: topic 't' not present in metadata"


def test_without_a_topic_name_the_message_still_names_the_cause():
    line = describe_kafka_error(timeout_from(error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)), "b:9092", 500)
    assert line.startswith("the topic does not exist: create it with 'gregor topics --create', or let")
