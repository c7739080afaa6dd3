"""`gregor transactions --list / --describe` (kafka-transactions.sh) against a broker holding an
ongoing transaction of a confluent-kafka producer, and its refusals of wrong arguments."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from tests.cli.conftest import gregor, in_process, one_error_line


@pytest.fixture
def ongoing(broker):
    txn_id = f"cli-{uuid.uuid4().hex[:8]}"
    topic = f"cli-txn-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"v", partition=0)
    producer.flush(10)
    yield txn_id, topic
    producer.abort_transaction(30)


def test_list_and_describe_an_ongoing_transaction(bootstrap, ongoing):
    txn_id, topic = ongoing
    listed = gregor("transactions", *bootstrap, "--list", "--state", "Ongoing")
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert any(row.split()[0] == txn_id and row.split()[3] == "Ongoing" for row in rows)
    described = gregor("transactions", *bootstrap, "--describe", "--transactional-id", txn_id)
    assert described.returncode == 0, described.stderr
    header, row = described.stdout.splitlines()
    fields = dict(zip(header.split(), row.split()))
    assert (fields["TransactionalId"], fields["TransactionState"], fields["TopicPartitions"]) == (
        txn_id, "Ongoing", f"{topic}-0")
    assert int(fields["TransactionDurationMs"]) >= 0 and fields["TransactionTimeoutMs"] == "60000"


def test_describe_unknown_id_is_one_error_line(bootstrap):
    result = gregor("transactions", *bootstrap, "--describe", "--transactional-id", "never-used")
    assert result.returncode != 0
    assert "describing transactional id never-used failed" in one_error_line(result)
    assert "TRANSACTIONAL_ID_NOT_FOUND" in one_error_line(result)


@pytest.mark.parametrize("args, message", [
    ((), "give exactly one of --list, --describe"),
    (("--describe",), "--describe needs --transactional-id"),
    (("--list", "--transactional-id", "x"), "--transactional-id works with --describe only"),
    (("--list", "--duration-filter", "-1"), "--duration-filter must be at least 0"),
])
def test_wrong_arguments(capsys, args, message):
    result = in_process(capsys, "transactions", "--bootstrap-server", "127.0.0.1:9", *args)
    assert result.returncode != 0
    assert message in one_error_line(result)
