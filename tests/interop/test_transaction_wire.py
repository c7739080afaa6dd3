"""The transaction coordinator's APIs on the wire, at the versions real clients do not all use:
FindCoordinator for transactional ids, AddPartitionsToTxn v4 (brokers' batched form, verifyOnly
for KIP-890 verification), PRODUCER_FENCED answered INVALID_PRODUCER_EPOCH to versions that
predate it, EndTxn without a transaction, AddPartitionsToTxn with an unknown topic."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse,
)
from tests.txn_wire import READ_COMMITTED, READ_UNCOMMITTED, batch, call, latest_offset

pytestmark = pytest.mark.interop
E = ErrorCode


def find(port: int, key: str) -> ErrorCode:
    response = call(port, FindCoordinatorRequest(key=key, key_type=1), 3, FindCoordinatorResponse)
    return ErrorCode(response.error_code)


def init(port: int, txn_id: str) -> tuple[int, int]:
    deadline = time.monotonic() + 20
    find(port, txn_id)  # the first lookup creates __transaction_state
    while True:
        response = call(port, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000,
                                                    producer_id=-1, producer_epoch=-1), 4, InitProducerIdResponse)
        if response.error_code == E.NONE:
            return response.producer_id, response.producer_epoch
        assert time.monotonic() < deadline, ErrorCode(response.error_code)
        time.sleep(0.1)


def add(port: int, version: int, transactions: list[tuple[str, int, int, bool, dict[str, list[int]]]]
        ) -> dict[str, dict[tuple[str, int], ErrorCode]]:
    def topics(parts: dict[str, list[int]]) -> list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]:
        return [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=n, partitions=p) for n, p in parts.items()]

    if version <= 3:
        ((txn_id, pid, epoch, _, parts),) = transactions
        request = AddPartitionsToTxnRequest(v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
                                            v3_and_below_producer_epoch=epoch, v3_and_below_topics=topics(parts))
        response = call(port, request, version, AddPartitionsToTxnResponse)
        return {txn_id: {(t.name, r.partition_index): ErrorCode(r.partition_error_code)
                         for t in response.results_by_topic_v3_and_below for r in t.results_by_partition}}
    request = AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, verify_only=verify, topics=topics(parts))
        for txn_id, pid, epoch, verify, parts in transactions])
    response = call(port, request, version, AddPartitionsToTxnResponse)
    return {result.transactional_id: {(t.name, r.partition_index): ErrorCode(r.partition_error_code)
                                      for t in result.topic_results for r in t.results_by_partition}
            for result in response.results_by_transaction}


def end(port: int, version: int, txn_id: str, pid: int, epoch: int, commit: bool) -> ErrorCode:
    request = EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit)
    return ErrorCode(call(port, request, version, EndTxnResponse).error_code)


@pytest.fixture(scope="module")
def topic(broker) -> str:
    name = f"wire-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(10)
    return name


def test_find_coordinator_for_transactional_ids(broker):
    assert find(broker.port, "") is E.INVALID_REQUEST
    init(broker.port, f"find-{uuid.uuid4().hex[:6]}")  # creates __transaction_state on the way
    assert find(broker.port, "any-id") is E.NONE


def test_batched_add_and_verify_only(broker, topic):
    a, b = f"a-{uuid.uuid4().hex[:6]}", f"b-{uuid.uuid4().hex[:6]}"
    (pid_a, epoch_a), (pid_b, epoch_b) = init(broker.port, a), init(broker.port, b)
    assert add(broker.port, 4, [(a, pid_a, epoch_a, True, {topic: [0]})]) == {a: {(topic, 0): E.INVALID_TXN_STATE}}
    added = add(broker.port, 4, [(a, pid_a, epoch_a, False, {topic: [0]}), (b, pid_b, epoch_b, False, {topic: [1]})])
    assert added == {a: {(topic, 0): E.NONE}, b: {(topic, 1): E.NONE}}
    verified = add(broker.port, 4, [(a, pid_a, epoch_a, True, {topic: [0, 1]}),
                                    (b, pid_b, epoch_b - 1, True, {topic: [1]})])
    assert verified == {a: {(topic, 0): E.NONE, (topic, 1): E.INVALID_TXN_STATE},
                        b: {(topic, 1): E.PRODUCER_FENCED}}
    assert end(broker.port, 3, a, pid_a, epoch_a, False) is E.NONE
    assert end(broker.port, 3, b, pid_b, epoch_b, False) is E.NONE


def test_stale_epoch_answers_by_version(broker, topic):
    txn_id = f"stale-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(broker.port, txn_id)
    pid_again, newer = init(broker.port, txn_id)
    assert (pid_again, newer) == (pid, epoch + 1)
    assert add(broker.port, 1, [(txn_id, pid, epoch, False, {topic: [0]})]) == {
        txn_id: {(topic, 0): E.INVALID_PRODUCER_EPOCH}}
    assert add(broker.port, 3, [(txn_id, pid, epoch, False, {topic: [0]})]) == {
        txn_id: {(topic, 0): E.PRODUCER_FENCED}}
    assert end(broker.port, 1, txn_id, pid, epoch, True) is E.INVALID_PRODUCER_EPOCH
    assert end(broker.port, 3, txn_id, pid, epoch, True) is E.PRODUCER_FENCED
    assert end(broker.port, 3, txn_id, pid + 1000, newer, True) is E.INVALID_PRODUCER_ID_MAPPING
    assert end(broker.port, 3, txn_id, pid, newer, True) is E.INVALID_TXN_STATE  # nothing begun


def test_unknown_topic_is_refused_and_the_rest_not_attempted(broker, topic):
    txn_id = f"unknown-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(broker.port, txn_id)
    answer = add(broker.port, 3, [(txn_id, pid, epoch, False, {topic: [0], "no-such-topic": [0]})])
    assert answer == {txn_id: {(topic, 0): E.OPERATION_NOT_ATTEMPTED,
                               ("no-such-topic", 0): E.UNKNOWN_TOPIC_OR_PARTITION}}


def test_gregor_admin_clients_list_and_describe(broker, topic):
    """Gregor's AdminClient (sync and asyncio) lists and describes an ongoing transaction."""
    import asyncio

    from gregor.aio import AdminClient as AioAdmin
    from gregor.client import AdminClient as SyncAdmin
    txn_id = f"admin-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(broker.port, txn_id)
    assert add(broker.port, 3, [(txn_id, pid, epoch, False, {topic: [1]})]) == {txn_id: {(topic, 1): E.NONE}}

    async def with_aio():
        async with AioAdmin(bootstrap_servers=broker.bootstrap) as admin:
            return (await admin.list_transactions(states=["Ongoing"], producer_ids=[pid], timeout=20),
                    await admin.describe_transactions([txn_id, "nobody"], timeout=20))
    sync = SyncAdmin({"bootstrap.servers": broker.bootstrap})
    try:
        answers = [(sync.list_transactions(["Ongoing"], [pid], timeout=20),
                    sync.describe_transactions([txn_id, "nobody"], timeout=20)), asyncio.run(with_aio())]
    finally:
        sync.close()
    for listed, described in answers:
        assert [(t.transactional_id, t.producer_id, t.state) for t in listed] == [(txn_id, pid, "Ongoing")]
        found = described[txn_id]
        assert (found.state, found.producer_id, found.producer_epoch, found.transaction_timeout_ms) == (
            "Ongoing", pid, epoch, 60_000)
        assert [tuple(tp) for tp in found.topic_partitions] == [(topic, 1)]
        assert found.transaction_start_time_ms is not None
        assert described["nobody"].code == E.TRANSACTIONAL_ID_NOT_FOUND
    assert end(broker.port, 3, txn_id, pid, epoch, False) is E.NONE


def produce_txn(port: int, txn_id: str, topic: str, partition: int, pid: int, epoch: int, sequence: int) -> ErrorCode:
    request = ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[ProduceRequest.PartitionProduceData(
            index=partition, records=batch([b"v"], pid, epoch, sequence))])])
    answer = call(port, request, 9, ProduceResponse).responses[0].partition_responses[0]
    return ErrorCode(answer.error_code)


def test_a_transactional_write_is_verified_with_the_coordinator(broker, topic):
    """KIP-890 part 1: a write to a partition not in the transaction is refused, and so is a late
    write of a transaction that has ended (which would otherwise hang on the partition)."""
    txn_id = f"verified-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(broker.port, txn_id)
    assert produce_txn(broker.port, txn_id, topic, 0, pid, epoch, 0) is E.INVALID_TXN_STATE
    assert add(broker.port, 3, [(txn_id, pid, epoch, False, {topic: [0]})]) == {txn_id: {(topic, 0): E.NONE}}
    assert produce_txn(broker.port, txn_id, topic, 0, pid, epoch, 0) is E.NONE
    assert produce_txn(broker.port, txn_id, topic, 1, pid, epoch, 0) is E.INVALID_TXN_STATE  # not added
    assert end(broker.port, 3, txn_id, pid, epoch, False) is E.NONE
    deadline = time.monotonic() + 10
    while produce_txn(broker.port, txn_id, topic, 0, pid, epoch, 1) is not E.INVALID_TXN_STATE:
        assert time.monotonic() < deadline, "a late write after the abort must be refused"
        time.sleep(0.05)
    assert latest_offset(broker.port, topic, 0, READ_COMMITTED) == latest_offset(broker.port, topic, 0,
                                                                                 READ_UNCOMMITTED)
