"""A producer waiting for a topic's metadata (up to max.block.ms) reports the broker's answer: a
topic the broker said does not exist stays the cause of the timeout even when a later metadata
request gets no answer before the deadline (a loaded broker, or the deadline cutting the last
request short), so that tools say "does not exist" rather than "cannot reach the cluster"."""

from __future__ import annotations

import asyncio

import pytest

from gregor.aio import Producer as AsyncProducer
from gregor.client import Producer
from gregor.client.errors import KafkaTimeoutError
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiKey
from tests.client.fake_broker import ANSWER, IGNORE, FakeBroker

MISSING = "missing-topic"


class FirstMetadataOnly:
    """Answers the first Metadata request (the topic is unknown) and leaves the later ones unanswered."""

    def __init__(self) -> None:
        self.metadata = 0

    def __call__(self, connection: int, api_key: int, request: int) -> str:
        if api_key != ApiKey.METADATA:
            return ANSWER
        self.metadata += 1
        return ANSWER if self.metadata == 1 else IGNORE


def _assert_the_answer_is_the_cause(error: KafkaTimeoutError) -> None:
    assert error.__cause__ is not None and error.__cause__.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "UNKNOWN_TOPIC_OR_PARTITION" in str(error)


def test_the_brokers_answer_stays_the_cause_when_a_later_request_times_out():
    behaviour = FirstMetadataOnly()
    with FakeBroker(behaviour) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "max.block.ms": 1500, "retry.backoff.ms": 50})
        try:
            with pytest.raises(KafkaTimeoutError) as raised:
                producer.send(MISSING, b"x")
        finally:
            producer.close(2)
    assert behaviour.metadata >= 2  # a later request went unanswered
    _assert_the_answer_is_the_cause(raised.value)


def test_the_async_producer_keeps_the_brokers_answer_too():
    behaviour = FirstMetadataOnly()

    async def send() -> KafkaTimeoutError:
        producer = AsyncProducer({"bootstrap.servers": broker.bootstrap, "max.block.ms": 1500,
                                  "retry.backoff.ms": 50})
        try:
            with pytest.raises(KafkaTimeoutError) as raised:
                await producer.send(MISSING, b"x")
            return raised.value
        finally:
            await producer.close()

    with FakeBroker(behaviour) as broker:
        error = asyncio.run(send())
    assert behaviour.metadata >= 2
    _assert_the_answer_is_the_cause(error)
