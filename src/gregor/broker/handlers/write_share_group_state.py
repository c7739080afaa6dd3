"""WriteShareGroupState (key 85), v0: a share-partition's state persisted by the leader of its
`__share_group_state` partition (acks=all), sent by the leader of the topic-partition.

Gregor's writes carry the whole state (start offset and every in-flight batch) and replace what
was persisted, where Kafka's may carry only the batches that changed; answered once the record
is replicated. NOT_COORDINATOR from a broker that does not lead the state partition,
INVALID_REQUEST for a delivery state that is not one, CLUSTER_AUTHORIZATION_FAILED without
CLUSTER_ACTION. The leader epoch is not checked (see docs/share-groups.md).
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.coordinator.share.record_state import RecordState
from gregor.coordinator.share.share_partition import ShareSnapshot, StateBatch
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import WriteShareGroupStateRequest, WriteShareGroupStateResponse

API_KEY = 85
_Result = WriteShareGroupStateResponse.WriteStateResult
_Partition = WriteShareGroupStateResponse.PartitionResult


async def handle(context: BrokerContext, request: WriteShareGroupStateRequest) -> WriteShareGroupStateResponse:
    if not context.allowed(AclOperation.CLUSTER_ACTION):
        return WriteShareGroupStateResponse(results=[_Result(topic_id=topic.topic_id, partitions=[
            _Partition(partition=p.partition, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            for p in topic.partitions]) for topic in request.topics])
    results = []
    for topic in request.topics:
        writes = []
        for part in topic.partitions:
            try:
                batches = tuple(StateBatch(b.first_offset, b.last_offset, RecordState(b.delivery_state),
                                           b.delivery_count) for b in part.state_batches)
            except ValueError:
                writes.append(_invalid())
                continue
            writes.append(asyncio.ensure_future(context.shares.store.serve_write(
                (request.group_id, topic.topic_id, part.partition),
                ShareSnapshot(part.start_offset, part.state_epoch, batches))))
        codes = await asyncio.gather(*writes)
        results.append(_Result(topic_id=topic.topic_id, partitions=[
            _Partition(partition=part.partition, error_code=code) for part, code in zip(topic.partitions, codes)]))
    return WriteShareGroupStateResponse(results=results)


def _invalid() -> asyncio.Future[ErrorCode]:
    done: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
    done.set_result(ErrorCode.INVALID_REQUEST)
    return done


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
