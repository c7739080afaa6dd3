"""Transaction protocol v2 (KIP-890 part 2) on the wire with Gregor's codec: with transaction.version
2 finalized (a new cluster's level), Produce v12 adds a partition to the transaction itself, TxnOffsetCommit
v5 adds the group's offsets partition, EndTxn v5 bumps the epoch, and a late write of the previous
epoch is refused after EndTxn; at level 0 (UpdateFeatures) the same versions keep the classic protocol."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka.admin import KafkaAdminClient

from gregor.client import AdminClient
from gregor.client.admin import NewTopic
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, ProduceRequest, ProduceResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
)
from tests.interop.test_transaction_wire import init
from tests.txn_wire import READ_COMMITTED, batch, call, latest_offset

pytestmark = pytest.mark.interop
E = ErrorCode


def produce(port: int, txn_id: str, topic: str, partition: int, records: bytes, version: int = 12) -> ErrorCode:
    request = ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    return ErrorCode(call(port, request, version, ProduceResponse).responses[0].partition_responses[0].error_code)


def end(port: int, txn_id: str, pid: int, epoch: int, commit: bool = True) -> EndTxnResponse:
    return call(port, EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                    committed=commit), 5, EndTxnResponse)


def state(port: int, txn_id: str) -> tuple[str, list[tuple[str, int]]]:
    described = call(port, DescribeTransactionsRequest(transactional_ids=[txn_id]), 0,
                     DescribeTransactionsResponse).transaction_states[0]
    return described.transaction_state, sorted((t.topic, p) for t in described.topics for p in t.partitions)


def group_coordinator_ready(port: int, group: str) -> None:
    """FindCoordinator for the group (the first creates __consumer_offsets), as a consumer does first."""
    deadline = time.monotonic() + 20
    while call(port, FindCoordinatorRequest(key=group, key_type=0), 3, FindCoordinatorResponse).error_code:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def completed(port: int, txn_id: str) -> None:
    deadline = time.monotonic() + 10
    while state(port, txn_id)[0] not in ("CompleteCommit", "CompleteAbort"):
        assert time.monotonic() < deadline, state(port, txn_id)
        time.sleep(0.05)


def finalize_transaction_version(broker, level: int) -> None:
    kafka = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        kind = "UPGRADE" if level == 2 else "SAFE_DOWNGRADE"
        assert kafka.update_features({"transaction.version": (kind, level)}) == {"transaction.version": "OK"}
    finally:
        kafka.close()


@pytest.fixture
def v2_topic(broker):
    """A topic on a cluster at transaction.version 2 (a new cluster's level)."""
    name = f"tv2-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        assert admin.describe_features(timeout=10).finalized_features["transaction.version"] == 2
        assert not isinstance(admin.create_topics([NewTopic(name, 2, 1)], timeout=10)[name], Exception)
    return name


def test_v2_produce_adds_partitions_end_txn_bumps_and_a_late_write_is_refused(broker, v2_topic):
    port, txn_id = broker.port, f"tv2-{uuid.uuid4().hex[:8]}"
    pid, epoch = init(port, txn_id)
    assert produce(port, txn_id, v2_topic, 0, batch([b"a"], pid, epoch, 0)) == E.NONE
    assert state(port, txn_id) == ("Ongoing", [(v2_topic, 0)])  # added by the produce, no AddPartitionsToTxn
    ended = end(port, txn_id, pid, epoch)
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (E.NONE, pid, epoch + 1)
    completed(port, txn_id)
    assert latest_offset(port, v2_topic, 0, READ_COMMITTED) == 2  # the record and its COMMIT marker
    # the previous epoch's late writes: fenced on the partition the marker reached, and by the
    # coordinator on a partition that would open a transaction
    assert produce(port, txn_id, v2_topic, 0, batch([b"late"], pid, epoch, 1)) == E.INVALID_PRODUCER_EPOCH
    assert produce(port, txn_id, v2_topic, 1, batch([b"late"], pid, epoch, 0)) == E.INVALID_PRODUCER_EPOCH
    assert state(port, txn_id)[0] == "CompleteCommit"
    # the next transaction, in the bumped epoch, with offsets committed by TxnOffsetCommit v5 alone
    assert produce(port, txn_id, v2_topic, 1, batch([b"b"], pid, epoch + 1, 0)) == E.NONE
    group_coordinator_ready(port, "tv2-group")
    commit = call(port, TxnOffsetCommitRequest(
        transactional_id=txn_id, group_id="tv2-group", producer_id=pid, producer_epoch=epoch + 1,
        generation_id=-1, member_id="", topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
            name=v2_topic, partitions=[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=1)])]), 5, TxnOffsetCommitResponse)
    assert commit.topics[0].partitions[0].error_code == E.NONE
    ongoing, partitions = state(port, txn_id)
    assert ongoing == "Ongoing" and (v2_topic, 1) in partitions and any(t == "__consumer_offsets" for t, _ in partitions)
    aborted = end(port, txn_id, pid, epoch + 1, commit=False)
    assert (aborted.error_code, aborted.producer_epoch) == (E.NONE, epoch + 2)


def test_at_transaction_version_0_produce_v12_does_not_add_partitions(broker, v2_topic):
    port, txn_id = broker.port, f"tv0-{uuid.uuid4().hex[:8]}"
    finalize_transaction_version(broker, 0)
    try:
        pid, epoch = init(port, txn_id)
        assert produce(port, txn_id, v2_topic, 0, batch([b"a"], pid, epoch, 0)) == E.INVALID_TXN_STATE
        assert state(port, txn_id) == ("Empty", [])
    finally:
        finalize_transaction_version(broker, 2)
