"""OffsetForLeaderEpoch (key 23), v0–v4: where a leader epoch ends in a partition's log.

Consumers use it to detect log truncation after a leader change (KIP-320), followers to find
where their log diverges from the leader's. As in Kafka, the answer comes from the leader only,
to consumers and replicas alike (the v3+ replica id is not looked at): a replica that is not the
leader answers NOT_LEADER_OR_FOLLOWER, as does a broker that hosts no replica of a partition the
metadata knows; a partition the metadata does not know is UNKNOWN_TOPIC_OR_PARTITION. A v2+
current leader epoch older than the leader's is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.

The answer is the largest epoch <= the requested one in the leader-epoch cache and the offset
where it ends: the start of the next epoch, or the log end offset for the latest epoch. An
undefined (-1) or unknown future epoch gets no error and -1 for both. v0 answers no epoch.
Gaps: none in the versions; Gregor has no ACLs, so TOPIC_AUTHORIZATION_FAILED is never answered.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

API_KEY = 23
MIN_VERSION, MAX_VERSION = 0, 4

_Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_Partition = OffsetForLeaderEpochResponse.EpochEndOffset


def handle(context: BrokerContext, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    if context.version >= 3 and request.replica_id >= 0:  # a follower's: broker traffic (CLUSTER_ACTION)
        described = ({t.topic for t in request.topics} if context.allowed(AclOperation.CLUSTER_ACTION) else set())
    else:
        described = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, {t.topic for t in request.topics})
    topics = [_Topic(topic=topic.topic, partitions=[
        _end_offset(context, topic.topic, p) if topic.topic in described
        else _Partition(partition=p.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for p in topic.partitions]) for topic in request.topics]
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)


def _end_offset(context: BrokerContext, topic: str,
                requested: OffsetForLeaderEpochRequest.OffsetForLeaderPartition) -> _Partition:
    partition = context.partitions.partition(topic, requested.partition)
    if partition is not None:
        return partition.offsets_for_leader_epoch(requested)
    known = context.metadata.image.partition(topic, requested.partition) is not None
    return _Partition(partition=requested.partition,
                      error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle)]
