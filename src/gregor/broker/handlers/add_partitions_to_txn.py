"""AddPartitionsToTxn (key 24), v0–v4: partitions join a producer's transaction.

v0–v3 come from producers: one transaction; partitions of unknown topics get
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as in Kafka; otherwise every
partition gets the coordinator's answer once the Ongoing record is written. v4 (KIP-890) batches
transactions and is what brokers send: with verifyOnly the coordinator only says, per partition,
whether it is in the transaction; without it (a Produce v12 or TxnOffsetCommit v5 under transaction
protocol v2, KIP-890 part 2) it adds them. v5 (its TRANSACTION_ABORTABLE error) is not offered. Before v2
PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH. Authorization as Kafka's: v0–v3 need WRITE on
the transactional id and on each topic, v4 (from brokers, which authorized the client's request)
CLUSTER_ACTION only.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.transaction_runtime import client_error
from gregor.coordinator.transaction.records import TopicPartition
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

API_KEY = 24
_Result = AddPartitionsToTxnResponse.AddPartitionsToTxnResult
_TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
_PartitionResult = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult


def _topic_results(errors: dict[TopicPartition, ErrorCode]) -> list[_TopicResult]:
    topics: dict[str, list[_PartitionResult]] = {}
    for (topic, index), error in errors.items():
        topics.setdefault(topic, []).append(_PartitionResult(partition_index=index, partition_error_code=error))
    return [_TopicResult(name=name, results_by_partition=results) for name, results in topics.items()]


async def _add(context: BrokerContext, transactional_id: str, producer_id: int, producer_epoch: int,
               topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic],
               verify_only: bool, from_client: bool) -> dict[TopicPartition, ErrorCode]:
    partitions = [(topic.name, index) for topic in topics for index in topic.partitions]
    if from_client:
        refused = _refused(context, transactional_id, partitions)
        if refused:
            return refused
    image = context.metadata.image
    unknown = {p for p in partitions if image.partition(*p) is None}
    if unknown:
        return {p: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if p in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                for p in partitions}
    coordinator = context.transactions.coordinator
    if verify_only:
        return coordinator.verify_partitions(transactional_id=transactional_id, producer_id=producer_id,
                                             producer_epoch=producer_epoch, partitions=partitions)
    result = await context.transactions.park(lambda token: coordinator.add_partitions(
        token, transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        partitions=partitions, now_ms=context.now_ms))
    return {p: result.error for p in partitions}


def _refused(context: BrokerContext, transactional_id: str,
             partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
    """Kafka's checks: WRITE on the transactional id, else every partition is refused; WRITE on
    each topic, else its partitions are refused and the others not attempted."""
    if not context.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return {p: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for p in partitions}
    writable = context.allowed_names(AclOperation.WRITE, ResourceType.TOPIC, {topic for topic, _ in partitions})
    if all(topic in writable for topic, _ in partitions):
        return {}
    return {p: ErrorCode.OPERATION_NOT_ATTEMPTED if p[0] in writable else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            for p in partitions}


async def handle(context: BrokerContext, request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    version = context.version
    if version >= 4 and not context.allowed(AclOperation.CLUSTER_ACTION):
        return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if version <= 3:
        errors = await _add(context, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                            request.v3_and_below_producer_epoch, request.v3_and_below_topics, False, True)
        errors = {p: client_error(error, version, 2) for p, error in errors.items()}
        return AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(errors))
    answers = await asyncio.gather(*(
        _add(context, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics, txn.verify_only, False)
        for txn in request.transactions))
    return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, results_by_transaction=[
        _Result(transactional_id=txn.transactional_id, topic_results=_topic_results(errors))
        for txn, errors in zip(request.transactions, answers)])


HANDLERS = [Handler(API_KEY, 0, 4, handle)]
