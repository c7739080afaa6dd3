"""InitializeShareGroupState (key 83), v0: a share group started afresh on a partition, by the
leader of the state's `__share_group_state` partition, asked by the group's coordinator
(inter-broker; Gregor's coordinator asks it for AlterShareGroupOffsets and resets).

The state becomes the given start offset (-1: `share.auto.offset.reset` when the partition is
first fetched) with nothing in flight, in the given state epoch, appended with acks=all; a state
epoch below the stored one is FENCED_STATE_EPOCH, as in Kafka. The share-partition's leader, whose
next write carries the older epoch, is fenced by it and reads the new state. NOT_COORDINATOR from a
broker that does not lead the state partition; CLUSTER_AUTHORIZATION_FAILED without CLUSTER_ACTION.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import InitializeShareGroupStateRequest, InitializeShareGroupStateResponse

API_KEY = 83
_Result = InitializeShareGroupStateResponse.InitializeStateResult
_Partition = InitializeShareGroupStateResponse.PartitionResult


async def handle(context: BrokerContext,
                 request: InitializeShareGroupStateRequest) -> InitializeShareGroupStateResponse:
    allowed = context.allowed(AclOperation.CLUSTER_ACTION)
    results = []
    for topic in request.topics:
        if not allowed:
            codes = [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * len(topic.partitions)
        else:
            codes = await asyncio.gather(*(context.shares.store.serve_initialize(
                (request.group_id, topic.topic_id, p.partition), p.state_epoch, p.start_offset)
                for p in topic.partitions))
        results.append(_Result(topic_id=topic.topic_id, partitions=[
            _Partition(partition=p.partition, error_code=code) for p, code in zip(topic.partitions, codes)]))
    return InitializeShareGroupStateResponse(results=results)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
