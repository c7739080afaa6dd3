"""OffsetDelete (key 47), v0: removes committed offsets of partitions a group no longer reads."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.protocol.messages import OffsetDeleteRequest, OffsetDeleteResponse

API_KEY = 47


def handle(context: BrokerContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    runtime = context.groups
    wanted = [(topic.name, p.partition_index) for topic in request.topics for p in topic.partitions]
    result, effects = runtime.coordinator.delete_offsets(group_id=request.group_id, partitions=wanted,
                                                         now_ms=context.now_ms)
    runtime.apply(effects)
    topics: dict[str, list] = {}
    if not result.error:
        for name, index in wanted:
            topics.setdefault(name, []).append(OffsetDeleteResponse.OffsetDeleteResponsePartition(
                partition_index=index, error_code=result.partitions.get((name, index), 0)))
    return OffsetDeleteResponse(error_code=result.error, throttle_time_ms=0, topics=[
        OffsetDeleteResponse.OffsetDeleteResponseTopic(name=name, partitions=partitions)
        for name, partitions in topics.items()])


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
