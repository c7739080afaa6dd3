"""InitProducerId (key 22), v0–v5, for idempotent producers.

Producer ids come from blocks the controller allocates through the metadata log, so ids are
never reused across restarts. Transactional ids wait for the transaction coordinator (a later
issue): such requests are refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a fatal error
that clients report instead of retrying forever. An idempotent producer needs IDEMPOTENT_WRITE on
the cluster or WRITE on some topic (KIP-679), else CLUSTER_AUTHORIZATION_FAILED; a transactional
one WRITE on its transactional id.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
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
        return InitProducerIdResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                      producer_id=-1, producer_epoch=-1)
    if request.producer_id >= 0:
        return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=request.producer_id,
                                      producer_epoch=(request.producer_epoch + 1) % 32767)
    try:
        producer_id = await context.controller.next_producer_id()
    except KafkaError as error:
        return InitProducerIdResponse(error_code=error.code, producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)


def _authorized(context: BrokerContext, transactional_id: str | None) -> bool:
    if transactional_id is not None:
        return context.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
    return (context.allowed(AclOperation.IDEMPOTENT_WRITE)
            or context.authorizer.allowed_by_type(context.connection, AclOperation.WRITE, ResourceType.TOPIC))


HANDLERS = [Handler(API_KEY, 0, 5, handle)]
