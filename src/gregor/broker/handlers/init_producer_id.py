"""InitProducerId (key 22), v0–v5: producer ids for idempotent and transactional producers.

Producer ids come from blocks the controller allocates through the metadata log, so ids are
never reused across restarts. Without a transactional id the producer gets a fresh id (or, v3+,
its epoch bumped). With one, the transaction coordinator answers (`TransactionRuntime`): the
id's epoch bumped, an older producer fenced, an ongoing transaction aborted (the answer is then
CONCURRENT_TRANSACTIONS and the producer retries), KIP-360's recovery with the producer's id and
epoch (v3+). Before v4 PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH, as Kafka does. An
idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679), else
CLUSTER_AUTHORIZATION_FAILED; a transactional one WRITE on its transactional id.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.broker.transaction_runtime import client_error
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

API_KEY = 22


async def handle(context: BrokerContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if not _authorized(context, request.transactional_id):
        code = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED if request.transactional_id is None
                else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
    if request.transactional_id is not None:
        return await _transactional(context, request)
    if request.producer_id >= 0:
        return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=request.producer_id,
                                      producer_epoch=(request.producer_epoch + 1) % 32767)
    try:
        producer_id = await context.controller.next_producer_id()
    except KafkaError as error:
        return InitProducerIdResponse(error_code=error.code, producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)


async def _transactional(context: BrokerContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    runtime = context.transactions
    try:
        await runtime.ready_producer_id()
    except KafkaError as error:
        return InitProducerIdResponse(error_code=error.code, producer_id=-1, producer_epoch=-1)
    version = context.version
    assert request.transactional_id is not None
    transactional_id = request.transactional_id
    result = await runtime.park(lambda token: runtime.coordinator.init_producer_id(
        token, transactional_id=transactional_id, timeout_ms=request.transaction_timeout_ms,
        producer_id=request.producer_id if version >= 3 else -1,
        producer_epoch=request.producer_epoch if version >= 3 else -1,
        new_producer_id=runtime.take_producer_id, now_ms=context.now_ms))
    return InitProducerIdResponse(error_code=client_error(result.error, version, 4), producer_id=result.producer_id,
                                  producer_epoch=result.producer_epoch)


def _authorized(context: BrokerContext, transactional_id: str | None) -> bool:
    if transactional_id is not None:
        return context.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
    return (context.allowed(AclOperation.IDEMPOTENT_WRITE)
            or context.authorizer.allowed_by_type(context.connection, AclOperation.WRITE, ResourceType.TOPIC))


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
