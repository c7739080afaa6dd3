"""The producer's delivery semantics against a scripted broker: retries, lost responses and
connections, the idempotent producer's sequences and identity renewal, timeouts, flush and
close, interceptors and callbacks, and configuration conflicts. No broker process needed."""

from __future__ import annotations

import logging
import threading

import pytest

from gregor.client.config import ConfigError
from gregor.client.errors import KafkaException
from gregor.client.interceptors import ProducerInterceptor
from gregor.client.producer import Producer, ProducerRecord
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiKey
from tests.client.fake_broker import CLOSE, IGNORE
from tests.client.fake_producer_broker import LOSE_RESPONSE, FakeProducerBroker

TOPIC = "fake-topic"


@pytest.fixture
def fake():
    with FakeProducerBroker({TOPIC: 1, "wide": 3}) as broker:
        yield broker


@pytest.fixture
def producer_factory(fake):
    made = []

    def make(**config):
        producer = Producer({"bootstrap.servers": fake.bootstrap, "retry.backoff.ms": 10,
                             "reconnect.backoff.ms": 10}, **config)
        made.append(producer)
        return producer
    yield make
    for producer in made:
        producer.close(5)


def send_all(producer: Producer, values: list[bytes], topic: str = TOPIC) -> list:
    futures = [producer.send(topic, value, partition=0) for value in values]
    producer.flush(20)
    return futures


def test_a_lost_response_is_retried_and_the_idempotent_broker_keeps_one_copy(fake, producer_factory):
    fake.produce_actions.append(LOSE_RESPONSE)
    producer = producer_factory()
    futures = send_all(producer, [b"a", b"b", b"c"])
    assert [future.get(0).offset for future in futures] == [0, 1, 2]
    assert fake.values(TOPIC) == [b"a", b"b", b"c"]
    sent = [(batch.producer_id, batch.base_sequence, batch.values) for batch in fake.received]
    assert len(sent) == 2 and sent[0] == sent[1] and sent[0][1] == 0


def test_without_idempotence_a_lost_response_duplicates_the_records(fake, producer_factory):
    fake.produce_actions.append(LOSE_RESPONSE)
    producer = producer_factory(enable_idempotence=False, acks=1)
    send_all(producer, [b"a"])
    assert fake.values(TOPIC) == [b"a", b"a"]
    assert fake.api_count(ApiKey.INIT_PRODUCER_ID) == 0
    assert fake.received[0].producer_id == -1


def test_a_connection_closed_before_the_request_is_read_is_retried(fake, producer_factory):
    fake.produce_actions.extend([CLOSE, CLOSE])
    producer = producer_factory()
    send_all(producer, [b"x"])
    assert fake.values(TOPIC) == [b"x"]
    assert fake.api_count(ApiKey.PRODUCE) == 3


def test_not_leader_refreshes_metadata_and_retries(fake, producer_factory):
    producer = producer_factory()
    producer.send(TOPIC, b"warm", partition=0).get(20)
    metadata_before = fake.api_count(ApiKey.METADATA)
    fake.produce_actions.append(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert producer.send(TOPIC, b"moved", partition=0).get(20).offset == 1
    assert fake.api_count(ApiKey.METADATA) > metadata_before
    assert fake.values(TOPIC) == [b"warm", b"moved"]


def test_duplicate_sequence_number_counts_as_success(fake, producer_factory):
    fake.produce_actions.append(ErrorCode.DUPLICATE_SEQUENCE_NUMBER)
    producer = producer_factory()
    assert producer.send(TOPIC, b"d", partition=0).exception(20) is None


def test_unknown_producer_id_takes_a_new_identity_and_starts_again_at_sequence_zero(fake, producer_factory):
    producer = producer_factory()
    producer.send(TOPIC, b"first", partition=0).get(20)
    fake.forget_producers()
    assert producer.send(TOPIC, b"second", partition=0).get(20).offset == 1
    assert fake.values(TOPIC) == [b"first", b"second"]
    assert fake.producer_ids_given == 2
    last = fake.received[-1]
    assert (last.producer_id, last.base_sequence) == (1002, 0)


def test_out_of_order_sequence_fails_the_batch_and_renews_the_identity(fake, producer_factory):
    fake.produce_actions.append(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    producer = producer_factory()
    error = producer.send(TOPIC, b"lost", partition=0).exception(20)
    assert error is not None and error.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert producer.send(TOPIC, b"next", partition=0).get(20).offset == 0
    assert fake.producer_ids_given == 2
    assert (fake.received[-1].producer_id, fake.received[-1].base_sequence) == (1002, 0)


def test_order_is_kept_when_a_request_fails_with_more_in_flight(fake, producer_factory):
    fake.produce_actions.append(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    producer = producer_factory(batch_size=64, linger_ms=0)
    values = [b"%03d" % index for index in range(60)]
    futures = send_all(producer, values)
    assert all(future.exception(0) is None for future in futures)
    assert fake.values(TOPIC) == values


def test_retries_run_out_and_the_error_is_named(fake, producer_factory):
    fake.produce_actions.extend([ErrorCode.NOT_ENOUGH_REPLICAS] * 5)
    producer = producer_factory(enable_idempotence=False, acks=1, retries=2)
    error = producer.send(TOPIC, b"r", partition=0).exception(20)
    assert error is not None and error.name == "NOT_ENOUGH_REPLICAS"
    assert fake.api_count(ApiKey.PRODUCE) == 3


def test_a_fatal_error_is_not_retried(fake, producer_factory):
    fake.produce_actions.append(ErrorCode.RECORD_LIST_TOO_LARGE)
    producer = producer_factory()
    error = producer.send(TOPIC, b"big", partition=0).exception(20)
    assert error is not None and error.name == "RECORD_LIST_TOO_LARGE"
    assert fake.api_count(ApiKey.PRODUCE) == 1


def test_records_expire_after_delivery_timeout_when_the_broker_is_silent(fake, producer_factory):
    producer = producer_factory(request_timeout_ms=300, delivery_timeout_ms=700, linger_ms=0)
    producer.send(TOPIC, b"ok", partition=0).get(20)
    fake.produce_actions.extend([IGNORE] * 100)
    error = producer.send(TOPIC, b"stuck", partition=0).exception(20)
    assert error is not None and error.name == "_MSG_TIMED_OUT"
    assert "delivery.timeout.ms" in str(error)
    fake.produce_actions.clear()
    assert producer.send(TOPIC, b"after", partition=0).get(20).partition == 0
    assert fake.values(TOPIC)[-1] == b"after"


def test_flush_with_a_timeout_raises_when_the_broker_is_silent(fake, producer_factory):
    fake.produce_actions.extend([IGNORE] * 100)
    producer = producer_factory(request_timeout_ms=30_000)
    future = producer.send(TOPIC, b"held", partition=0)
    with pytest.raises(KafkaException) as raised:
        producer.flush(0.3)
    assert raised.value.name == "_TIMED_OUT"
    assert not future.done()
    producer.close(0)
    assert future.exception(0).name == "_DESTROY"


def test_close_with_a_timeout_fails_what_was_not_acknowledged(fake):
    fake.produce_actions.extend([IGNORE] * 100)
    producer = Producer({"bootstrap.servers": fake.bootstrap}, request_timeout_ms=30_000)
    futures = [producer.send(TOPIC, b"%d" % index, partition=0) for index in range(5)]
    producer.close(0.3)
    errors = {future.exception(0).name for future in futures}
    assert errors == {"_DESTROY"}
    producer.close(0.3)
    with pytest.raises(KafkaException) as raised:
        producer.send(TOPIC, b"late")
    assert raised.value.name == "_STATE"


def test_the_context_manager_sends_then_closes(fake):
    with Producer({"bootstrap.servers": fake.bootstrap}, linger_ms=60_000) as producer:
        future = producer.send(TOPIC, b"ctx", partition=0)
    assert future.get(0).offset == 0
    assert "closed" in repr(producer)


def test_an_unknown_topic_fails_within_max_block_ms_naming_it(producer_factory):
    producer = producer_factory(max_block_ms=400)
    with pytest.raises(KafkaException) as raised:
        producer.send("missing-topic", b"x")
    assert raised.value.name == "_TIMED_OUT"
    assert "'missing-topic'" in str(raised.value) and "UNKNOWN_TOPIC_OR_PARTITION" in str(raised.value)


def test_an_auto_created_topic_is_waited_for():
    with FakeProducerBroker({}, auto_create=True) as fake:
        with Producer({"bootstrap.servers": fake.bootstrap}, retry_backoff_ms=10) as producer:
            assert producer.send("created", b"v").get(20).partition == 0
            assert [item.partition for item in producer.partitions_for("created")] == [0]
        assert fake.values("created") == [b"v"]


def test_partitions_for_lists_the_topic(producer_factory):
    producer = producer_factory()
    assert [(item.partition, item.leader) for item in producer.partitions_for("wide")] == [(0, 0), (1, 0), (2, 0)]


def test_interceptors_run_in_order_and_acknowledge_before_the_callback(producer_factory):
    events = []

    class Tag(ProducerInterceptor):
        def __init__(self, name: str) -> None:
            self.name = name

        def on_send(self, record: ProducerRecord) -> ProducerRecord:
            events.append(f"send {self.name}")
            return record._replace(value=record.value + self.name.encode())

        def on_acknowledgement(self, metadata, exception) -> None:
            events.append(f"ack {self.name} {metadata.offset}")

        def close(self) -> None:
            events.append(f"close {self.name}")

    class Broken(ProducerInterceptor):
        def on_send(self, record):
            raise RuntimeError("interceptor bug")

        def on_acknowledgement(self, metadata, exception):
            raise RuntimeError("interceptor bug")

    producer = producer_factory(interceptor_classes=[Tag("1"), Broken(), Tag("2")])
    done = threading.Event()
    future = producer.send(TOPIC, b"v", partition=0, callback=lambda metadata, error: (
        events.append(f"callback {metadata.offset}"), done.set()))
    assert done.wait(20)
    assert future.get(0).offset == 0
    producer.close(5)
    assert events == ["send 1", "send 2", "ack 1 0", "ack 2 0", "callback 0", "close 1", "close 2"]


def test_a_failing_callback_is_logged_and_later_callbacks_still_run(producer_factory, caplog):
    producer = producer_factory(linger_ms=1000)
    threads = []

    def broken(metadata, error):
        raise ValueError("callback bug")

    producer.send(TOPIC, b"a", partition=0, callback=broken)
    second = producer.send(TOPIC, b"b", partition=0,
                           callback=lambda metadata, error: threads.append(threading.current_thread()))
    with caplog.at_level(logging.ERROR, logger="gregor.client.producer"):
        producer.flush(20)
    assert second.get(0).offset == 1
    assert threads and threads[0] is not threading.current_thread()
    assert any(record.exc_info and isinstance(record.exc_info[1], ValueError) for record in caplog.records)


def test_add_callback_after_completion_runs_at_once(producer_factory):
    producer = producer_factory()
    future = producer.send(TOPIC, b"v", partition=0)
    future.get(20)
    seen = []
    future.add_callback(lambda metadata, error: seen.append((metadata.offset, error)))
    assert seen == [(0, None)]


def test_keyless_records_stick_to_one_partition_per_batch(fake, producer_factory):
    producer = producer_factory(batch_size=200, linger_ms=0)
    futures = [producer.send("wide", b"%02d" % index) for index in range(40)]
    producer.flush(20)
    partitions = [future.get(0).partition for future in futures]
    assert sum(len(fake.values("wide", partition)) for partition in range(3)) == 40
    switches = sum(1 for before, after in zip(partitions, partitions[1:]) if before != after)
    assert switches < 20


@pytest.mark.parametrize("config, message", [
    ({"enable.idempotence": True, "acks": 0}, "acks must be all"),
    ({"enable.idempotence": True, "retries": 0}, "retries must not be 0"),
    ({"max.in.flight.requests.per.connection": 6}, "max.in.flight.requests.per.connection"),
    ({"transactional.id": "t", "enable.idempotence": False}, "transactional.id needs enable.idempotence"),
    ({"lingr.ms": 5}, "lingr.ms"),
    ({"delivery.timeout.ms": 100, "request.timeout.ms": 1000}, "delivery.timeout.ms must be at least"),
])
def test_configuration_conflicts_are_refused(config, message):
    with pytest.raises(ConfigError, match=message):
        Producer({"bootstrap.servers": "127.0.0.1:1", **config})


def test_unset_idempotence_yields_to_acks_one(fake, producer_factory):
    producer = producer_factory(acks=1)
    producer.send(TOPIC, b"v", partition=0).get(20)
    assert fake.api_count(ApiKey.INIT_PRODUCER_ID) == 0


def test_keyword_arguments_take_kafka_keys_with_underscores(fake):
    with Producer(bootstrap_servers=fake.bootstrap, linger_ms=5, client_id="kw") as producer:
        assert producer.client_id == "kw"
        assert producer.send(TOPIC, b"v", partition=0).get(20).offset == 0
