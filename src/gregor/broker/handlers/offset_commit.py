"""OffsetCommit (key 8), v0–v9: answered once the offsets are written to `__consumer_offsets`.

Partitions of topics this cluster does not have get UNKNOWN_TOPIC_OR_PARTITION, as Kafka
answers; the rest go to the coordinator together. v9's member epoch is the generation of a
classic group, and the member epoch of a consumer-protocol (KIP-848) group, whose members must
commit with v9+ (STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH, UNSUPPORTED_VERSION as Kafka). The
group needs READ (GROUP_AUTHORIZATION_FAILED on every partition otherwise) and each topic READ
(TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.coordinator.results import OffsetCommitResult
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import OffsetCommitRequest, OffsetCommitResponse

API_KEY = 8
_Topic = OffsetCommitResponse.OffsetCommitResponseTopic
_Partition = OffsetCommitResponse.OffsetCommitResponsePartition


def handle(context: BrokerContext, request: OffsetCommitRequest):
    version = context.version
    order: list[tuple[str, int]] = []
    unknown: dict[tuple[str, int], ErrorCode] = {}
    offsets = {}
    group_allowed = context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id)
    readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC, {t.name for t in request.topics})
    for topic in request.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            order.append(key)
            if not group_allowed:
                unknown[key] = ErrorCode.GROUP_AUTHORIZATION_FAILED
            elif topic.name not in readable:
                unknown[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif context.metadata.image.partition(topic.name, partition.partition_index) is None:
                unknown[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[key] = (partition.committed_offset,
                                partition.committed_leader_epoch if version >= 6 else -1,
                                partition.committed_metadata)

    def respond(result: OffsetCommitResult) -> OffsetCommitResponse:
        errors = {**unknown, **result.errors}
        topics: dict[str, list[_Partition]] = {}
        for name, index in order:
            topics.setdefault(name, []).append(_Partition(partition_index=index, error_code=errors[(name, index)]))
        return OffsetCommitResponse(throttle_time_ms=0, topics=[
            _Topic(name=name, partitions=partitions) for name, partitions in topics.items()])

    if not offsets:
        return respond(OffsetCommitResult({}))

    def call(token: object) -> list:
        return context.groups.coordinator.commit_offsets(
            token, group_id=request.group_id,
            generation_id=request.generation_id_or_member_epoch if version >= 1 else -1,
            member_id=request.member_id if version >= 1 else "",
            group_instance_id=request.group_instance_id if version >= 7 else None,
            retention_time_ms=request.retention_time_ms if 2 <= version <= 4 else -1,
            offsets=offsets, now_ms=context.now_ms, api_version=version)

    return context.groups.park(call, OffsetCommitResult, respond)


HANDLERS = [Handler(API_KEY, 0, 9, handle)]
