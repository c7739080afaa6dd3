"""AlterShareGroupOffsets (key 91), v0 (Kafka 4.1; a spec patch): an empty share group's start
offset set on partitions (`broker.share_offsets.alter`: InitializeShareGroupState in the next
state epoch, fencing the share-partitions' leaders).

Asked of the group's coordinator (NOT_COORDINATOR elsewhere). READ on the group
(GROUP_AUTHORIZATION_FAILED, top level) and on each topic (TOPIC_AUTHORIZATION_FAILED for its
partitions) are needed, as Kafka; a group with members is NON_EMPTY_GROUP; an unknown group is
created, empty; an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION, a negative offset
INVALID_REQUEST. Offsets past the log's ends are kept as given (the share-partition moves a start
below the log start up to it when loaded).
"""

from __future__ import annotations

from gregor.broker import share_offsets
from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.share_group_offsets_common import group_error
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse

API_KEY = 91
_Topic = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
_Partition = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponsePartition


def _refused(code: ErrorCode, message: str | None) -> AlterShareGroupOffsetsResponse:
    return AlterShareGroupOffsetsResponse(throttle_time_ms=0, error_code=code, error_message=message, responses=[])


async def handle(context: BrokerContext, request: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse:
    group_id = request.group_id
    refused = group_error(context, group_id, AclOperation.READ)
    if refused is not None:
        return _refused(*refused)
    asked: dict[str, dict[int, int]] = {}
    for topic in request.topics:
        asked.setdefault(topic.topic_name, {}).update({p.partition_index: p.start_offset for p in topic.partitions})
    readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC, list(asked))
    error, results = await share_offsets.alter(context.shares, group_id,
                                               {t: p for t, p in asked.items() if t in readable})
    if error:
        return _refused(error, f"The share group {group_id} has members." if error == ErrorCode.NON_EMPTY_GROUP
                        else None)
    responses = []
    for name, partitions in asked.items():
        codes = results.get(name, {index: ErrorCode.TOPIC_AUTHORIZATION_FAILED for index in partitions})
        topic_id = context.shares.topic_id(name)
        responses.append(_Topic(topic_name=name, topic_id=topic_id if topic_id is not None else _Topic().topic_id,
                                partitions=[_Partition(partition_index=i, error_code=c) for i, c in codes.items()]))
    return AlterShareGroupOffsetsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, responses=responses)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
