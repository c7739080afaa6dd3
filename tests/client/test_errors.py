"""The client's error table: Kafka's names and retriable set, librdkafka's local codes."""

from __future__ import annotations

import pytest

from gregor.client.errors import (
    ClientErrorCode, KafkaConnectionError, KafkaError, KafkaException, KafkaTimeoutError,
    UnknownTopicOrPartitionError, error_for,
)
from gregor.protocol.error_codes import ErrorCode


@pytest.mark.parametrize("code, name, retriable", [
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, "NOT_LEADER_OR_FOLLOWER", True),
    (ErrorCode.LEADER_NOT_AVAILABLE, "LEADER_NOT_AVAILABLE", True),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "UNKNOWN_TOPIC_OR_PARTITION", True),
    (ErrorCode.REQUEST_TIMED_OUT, "REQUEST_TIMED_OUT", True),
    (ErrorCode.NETWORK_EXCEPTION, "NETWORK_EXCEPTION", True),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "COORDINATOR_LOAD_IN_PROGRESS", True),
    (ErrorCode.COORDINATOR_NOT_AVAILABLE, "COORDINATOR_NOT_AVAILABLE", True),
    (ErrorCode.NOT_COORDINATOR, "NOT_COORDINATOR", True),
    (ErrorCode.NOT_ENOUGH_REPLICAS, "NOT_ENOUGH_REPLICAS", True),
    (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True),
    (ErrorCode.KAFKA_STORAGE_ERROR, "KAFKA_STORAGE_ERROR", True),
    (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "FETCH_SESSION_ID_NOT_FOUND", True),
    (ErrorCode.UNKNOWN_LEADER_EPOCH, "UNKNOWN_LEADER_EPOCH", True),
    (ErrorCode.OFFSET_NOT_AVAILABLE, "OFFSET_NOT_AVAILABLE", True),
    # Not RetriableException subclasses in Kafka's Errors.java:
    (ErrorCode.REBALANCE_IN_PROGRESS, "REBALANCE_IN_PROGRESS", False),
    (ErrorCode.TOPIC_ALREADY_EXISTS, "TOPIC_ALREADY_EXISTS", False),
    (ErrorCode.UNKNOWN_SERVER_ERROR, "UNKNOWN_SERVER_ERROR", False),
    (ClientErrorCode._TRANSPORT, "_TRANSPORT", True),
    (ClientErrorCode._TIMED_OUT, "_TIMED_OUT", True),
    (ClientErrorCode._ALL_BROKERS_DOWN, "_ALL_BROKERS_DOWN", True),
    (ClientErrorCode._INVALID_ARG, "_INVALID_ARG", False),
    (ClientErrorCode._DESTROY, "_DESTROY", False),
])
def test_names_and_retriable_follow_kafka(code, name, retriable):
    error = KafkaError.of(code)
    assert (error.code, error.name, error.retriable, error.fatal) == (int(code), name, retriable, False)
    assert type(error.code) is int


def test_str_starts_with_the_name_and_carries_the_message():
    error = KafkaException(ErrorCode.NOT_LEADER_OR_FOLLOWER, "partition t-0 moved")
    assert str(error) == "NOT_LEADER_OR_FOLLOWER: partition t-0 moved"
    assert str(KafkaException(ErrorCode.TOPIC_ALREADY_EXISTS)) == "TOPIC_ALREADY_EXISTS"
    assert str(KafkaException(ClientErrorCode._TRANSPORT)).startswith("_TRANSPORT: Local: ")
    assert error.error.message == "partition t-0 moved" and error.code == 6 and error.retriable


def test_an_unknown_code_keeps_its_value_under_kafkas_name_for_unknown_errors():
    error = KafkaError.of(9999)
    assert (error.code, error.name, error.retriable) == (9999, "UNKNOWN_SERVER_ERROR", False)


def test_fatal_is_set_by_the_component_that_knows():
    assert KafkaError.of(ErrorCode.PRODUCER_FENCED, fatal=True).fatal


@pytest.mark.parametrize("code, cls", [
    (ClientErrorCode._TIMED_OUT, KafkaTimeoutError),
    (ErrorCode.REQUEST_TIMED_OUT, KafkaTimeoutError),
    (ClientErrorCode._TRANSPORT, KafkaConnectionError),
    (ClientErrorCode._ALL_BROKERS_DOWN, KafkaConnectionError),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UnknownTopicOrPartitionError),
    (ErrorCode.INVALID_CONFIG, KafkaException),
])
def test_error_for_picks_the_most_specific_class(code, cls):
    error = error_for(code, "why")
    assert type(error) is cls and isinstance(error, KafkaException)
    assert error.error == KafkaError.of(code, "why")
