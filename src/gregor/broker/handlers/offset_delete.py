"""OffsetDelete (key 47), v0: removes committed offsets of partitions a group no longer reads.

Needs DELETE on the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
(TOPIC_AUTHORIZATION_FAILED for its partitions)."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import OffsetDeleteRequest, OffsetDeleteResponse

API_KEY = 47


def handle(context: BrokerContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    runtime = context.groups
    if not context.allowed(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, topics=[])
    readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC, {t.name for t in request.topics})
    wanted = [(topic.name, p.partition_index) for topic in request.topics for p in topic.partitions]
    result, effects = runtime.coordinator.delete_offsets(
        group_id=request.group_id, partitions=[key for key in wanted if key[0] in readable], now_ms=context.now_ms)
    runtime.apply(effects)
    topics: dict[str, list] = {}
    if not result.error:
        for name, index in wanted:
            code = result.partitions.get((name, index), 0) if name in readable else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            topics.setdefault(name, []).append(OffsetDeleteResponse.OffsetDeleteResponsePartition(
                partition_index=index, error_code=code))
    return OffsetDeleteResponse(error_code=result.error, throttle_time_ms=0, topics=[
        OffsetDeleteResponse.OffsetDeleteResponseTopic(name=name, partitions=partitions)
        for name, partitions in topics.items()])


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
