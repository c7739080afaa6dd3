"""EndTxn (key 26), v0–v5: commit or abort a producer's transaction.

Answered once PrepareCommit or PrepareAbort is written to `__transaction_state`; the coordinator
then writes the markers and completes the transaction. v5 is transaction protocol v2 (KIP-890)
when the cluster's `transaction.version` is 2: the epoch is bumped on every EndTxn and the answer
carries the producer id and the new epoch; with the feature off a v5 request gets the classic
semantics and the unchanged id and epoch. Before v2 PRODUCER_FENCED is answered
INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.transaction_runtime import client_error
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import EndTxnRequest, EndTxnResponse

API_KEY = 26


async def handle(context: BrokerContext, request: EndTxnRequest) -> EndTxnResponse:
    if not context.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return EndTxnResponse(throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    runtime = context.transactions
    version = context.version
    epoch_bump = version >= 5 and runtime.transaction_version >= 2
    if epoch_bump:
        try:
            await runtime.ready_producer_id()
        except KafkaError as error:
            return EndTxnResponse(throttle_time_ms=0, error_code=error.code)
    result = await runtime.park(lambda token: runtime.coordinator.end_transaction(
        token, transactional_id=request.transactional_id, producer_id=request.producer_id,
        producer_epoch=request.producer_epoch, commit=request.committed, now_ms=context.now_ms,
        epoch_bump=epoch_bump, new_producer_id=runtime.take_producer_id))
    producer_id, producer_epoch = result.producer_id, result.producer_epoch
    if not epoch_bump and result.error is ErrorCode.NONE:
        producer_id, producer_epoch = request.producer_id, request.producer_epoch
    return EndTxnResponse(throttle_time_ms=0, error_code=client_error(result.error, version, 2),
                          producer_id=producer_id, producer_epoch=producer_epoch)


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
