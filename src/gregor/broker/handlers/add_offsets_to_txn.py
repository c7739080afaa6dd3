"""AddOffsetsToTxn (key 25), v0–v4: a consumer group's offsets join a producer's transaction.

The group's `__consumer_offsets` partition is added to the transaction like any partition, so
that the transaction's markers reach it and its TxnOffsetCommit offsets become visible (or are
dropped) with the transaction. Before v2 PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from gregor.broker.group_runtime import OFFSETS_TOPIC
from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.transaction_runtime import client_error
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse

API_KEY = 25


async def handle(context: BrokerContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    if not request.group_id:
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_GROUP_ID)
    if not context.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if OFFSETS_TOPIC not in context.metadata.image.topics:
        created = await context.groups.ensure_offsets_topic()
        if created is not None and created.error:
            return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    partition = (OFFSETS_TOPIC, context.groups.coordinator.partition_for(request.group_id))
    coordinator = context.transactions.coordinator
    result = await context.transactions.park(lambda token: coordinator.add_partitions(
        token, transactional_id=request.transactional_id, producer_id=request.producer_id,
        producer_epoch=request.producer_epoch, partitions=[partition], now_ms=context.now_ms))
    return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=client_error(result.error, context.version, 2))


HANDLERS = [Handler(API_KEY, 0, 4, handle)]
