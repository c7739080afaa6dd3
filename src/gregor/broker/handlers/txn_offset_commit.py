"""TxnOffsetCommit (key 28), v0–v4: a transactional producer commits a group's offsets.

The offsets are written to the group's `__consumer_offsets` partition in the producer's
transactional batch (so that the partition's producer state fences a zombie producer's write)
and stay invisible until the transaction's COMMIT marker reaches that partition; an ABORT drops
them (`GroupCoordinator.commit_transactional_offsets` / `complete_transaction`). v3+ carry the
consumer's member id and generation (KIP-447), checked when given. Partitions of topics this
cluster does not have get UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.coordinator.results import OffsetCommitResult
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse

API_KEY = 28
_Topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
_Partition = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition


def handle(context: BrokerContext, request: TxnOffsetCommitRequest):
    version = context.version
    order: list[tuple[str, int]] = []
    failed: dict[tuple[str, int], ErrorCode] = {}
    offsets = {}
    if not context.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        refusal: ErrorCode | None = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        refusal = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        refusal = None
    readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC, {t.name for t in request.topics})
    for topic in request.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            order.append(key)
            if refusal is not None:
                failed[key] = refusal
            elif topic.name not in readable:
                failed[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif context.metadata.image.partition(*key) is None:
                failed[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[key] = (partition.committed_offset,
                                partition.committed_leader_epoch if version >= 2 else -1,
                                partition.committed_metadata)

    def respond(result: OffsetCommitResult) -> TxnOffsetCommitResponse:
        errors = {**failed, **result.errors}
        topics: dict[str, list[_Partition]] = {}
        for name, index in order:
            topics.setdefault(name, []).append(_Partition(partition_index=index, error_code=errors[(name, index)]))
        return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
            _Topic(name=name, partitions=partitions) for name, partitions in topics.items()])

    if not offsets:
        return respond(OffsetCommitResult({}))

    def call(token: object) -> list:
        return context.groups.coordinator.commit_transactional_offsets(
            token, group_id=request.group_id, producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            generation_id=request.generation_id if version >= 3 else -1,
            member_id=request.member_id if version >= 3 else "",
            group_instance_id=request.group_instance_id if version >= 3 else None,
            offsets=offsets, now_ms=context.now_ms)

    return context.groups.park(call, OffsetCommitResult, respond)


HANDLERS = [Handler(API_KEY, 0, 4, handle)]
