"""DeleteShareGroupState (key 86), v0: a share group's state on a partition forgotten (a
tombstone in `__share_group_state`, appended with acks=all) by the leader of the state
partition, asked by the group's coordinator (inter-broker; for DeleteGroups and
DeleteShareGroupOffsets).

A partition without state answers NONE. The share-partition's leader, if it still has the state
in memory, is fenced by its next write (the next state the coordinator initializes has a higher
epoch) or reads nothing on its next load. NOT_COORDINATOR from a broker that does not lead the
state partition; CLUSTER_AUTHORIZATION_FAILED without CLUSTER_ACTION.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DeleteShareGroupStateRequest, DeleteShareGroupStateResponse

API_KEY = 86
_Result = DeleteShareGroupStateResponse.DeleteStateResult
_Partition = DeleteShareGroupStateResponse.PartitionResult


async def handle(context: BrokerContext, request: DeleteShareGroupStateRequest) -> DeleteShareGroupStateResponse:
    allowed = context.allowed(AclOperation.CLUSTER_ACTION)
    results = []
    for topic in request.topics:
        if not allowed:
            codes = [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * len(topic.partitions)
        else:
            codes = await asyncio.gather(*(context.shares.store.serve_delete(
                (request.group_id, topic.topic_id, p.partition)) for p in topic.partitions))
        results.append(_Result(topic_id=topic.topic_id, partitions=[
            _Partition(partition=p.partition, error_code=code) for p, code in zip(topic.partitions, codes)]))
    return DeleteShareGroupStateResponse(results=results)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
