"""AllocateProducerIds (key 67), v0, on the controller listener: a broker-only node asks for the
next block of producer ids (1000 at a time, as Kafka hands them out) when its InitProducerId
answers have used up the last one. The block is committed to the metadata log before it is
handed out, so no id is ever given to two producers, even across controller failover.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.allocate_producer_ids import AllocateProducerIdsRequest, AllocateProducerIdsResponse

API_KEY = 67


async def handle(context: QuorumContext, request: AllocateProducerIdsRequest) -> AllocateProducerIdsResponse:
    server = context.quorum
    try:
        block = await server.submit(lambda: server.controller.allocate_producer_ids(request.broker_id,
                                                                                    request.broker_epoch))
    except KafkaError as error:
        return AllocateProducerIdsResponse(error_code=error.code)
    return AllocateProducerIdsResponse(error_code=block.error, producer_id_start=block.first_producer_id,
                                       producer_id_len=block.size)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
