"""ListOffsets (key 2), v0–v10: earliest, latest, by timestamp, max timestamp, earliest local,
latest tiered.

Special timestamps as in Kafka: -1 latest (the high watermark; the last stable offset with
isolation_level READ_COMMITTED, v2+, which also hides a timestamp lookup's answer at or past it), -2 earliest (log start offset),
-3 the offset of the largest timestamp (v7+), -4 earliest local (v8+; all data is local, so it is
the log start offset), -5 latest tiered (v9+, KIP-1005; nothing is tiered, so offset and epoch
are -1, as Kafka answers without remote storage). v10's timeout is for remote lookups (KIP-1075)
and has nothing to wait for. v0 answers with the old-style offsets array. Each topic needs DESCRIBE
(TOPIC_AUTHORIZATION_FAILED otherwise).
"""

from __future__ import annotations

from gregor.broker.errors import error_code_of
from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from gregor.replication.partition import LATEST_TIERED_TIMESTAMP, READ_UNCOMMITTED

API_KEY = 2
MIN_VERSION, MAX_VERSION = 0, 10


_Topic = ListOffsetsResponse.ListOffsetsTopicResponse
_Partition = ListOffsetsResponse.ListOffsetsPartitionResponse


def handle(context: BrokerContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    topics = []
    described = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, {t.name for t in request.topics})
    for topic in request.topics:
        partitions = [_lookup(context, request, topic.name, p) if topic.name in described else _Partition(
            partition_index=p.partition_index, timestamp=-1, offset=-1,
            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic.partitions]
        topics.append(_Topic(name=topic.name, partitions=partitions))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def _lookup(context: BrokerContext, request: ListOffsetsRequest, topic: str, request_partition) -> _Partition:
    response = _Partition(partition_index=request_partition.partition_index, timestamp=-1, offset=-1)
    partition = context.partitions.partition(topic, request_partition.partition_index)
    if partition is None:
        response.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return response
    timestamp = request_partition.timestamp
    epoch = request_partition.current_leader_epoch if context.version >= 4 else -1
    try:
        found = partition.offset_for_timestamp(timestamp, epoch,
                                               request.isolation_level if context.version >= 2 else READ_UNCOMMITTED)
    except Exception as error:  # noqa: BLE001 - failures become partition errors
        response.error_code, _ = error_code_of(error)
        return response
    if timestamp == LATEST_TIERED_TIMESTAMP:  # no tiered storage: Kafka answers -1 (KIP-1005)
        response.leader_epoch = -1
        if context.version == 0:
            response.old_style_offsets = []
        return response
    offset, found_timestamp = found if found is not None else (-1, -1)
    response.leader_epoch = partition.leader_epoch
    if context.version == 0:
        response.old_style_offsets = [offset] if offset >= 0 else []
    response.offset = offset
    response.timestamp = found_timestamp
    return response


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle)]
