"""DescribeShareGroupOffsets (key 90), v0 (Kafka 4.1; a spec patch): each share group's start
offset on partitions, from the share state (`broker.share_offsets`).

Asked of the group's coordinator (NOT_COORDINATOR elsewhere). DESCRIBE on the group
(GROUP_AUTHORIZATION_FAILED for the group) and on each topic (TOPIC_AUTHORIZATION_FAILED for its
partitions) are needed, as Kafka. Topics null: every partition of the topics the group may have
state on (those its members subscribed to or whose offsets were altered); start offset -1 where
the group has no state. An unknown group with null topics is GROUP_ID_NOT_FOUND; with topics
named, their state is answered. The leader epoch is the partition's current one.
"""

from __future__ import annotations

from gregor.broker import share_offsets
from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.share_group_offsets_common import group_error
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse

API_KEY = 90
_Group = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
_Topic = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseTopic
_Partition = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponsePartition
_Asked = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup


async def handle(context: BrokerContext,
                 request: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse:
    groups = [await _describe(context, asked) for asked in request.groups]
    return DescribeShareGroupOffsetsResponse(throttle_time_ms=0, groups=groups)


async def _describe(context: BrokerContext, asked: _Asked) -> _Group:
    group_id = asked.group_id
    refused = group_error(context, group_id, AclOperation.DESCRIBE)
    if refused is None and asked.topics is None and group_id not in context.shares.groups.groups:
        refused = ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
    if refused is not None:
        return _Group(group_id=group_id, topics=[], error_code=refused[0], error_message=refused[1])
    wanted = None if asked.topics is None else {t.topic_name: list(t.partitions) for t in asked.topics}
    offsets = await share_offsets.describe(context.shares, group_id, wanted)
    readable = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, list(offsets))
    topics = []
    for name, partitions in offsets.items():
        topic_id = context.shares.topic_id(name)
        topics.append(_Topic(topic_name=name, topic_id=topic_id if topic_id is not None and name in readable
                             else _Topic().topic_id, partitions=[
            _Partition(partition_index=p.index, start_offset=p.start_offset if name in readable else -1,
                       leader_epoch=p.leader_epoch if name in readable else -1,
                       error_code=p.error if name in readable else ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                       error_message=p.message if name in readable else None)
            for p in partitions]))
    return _Group(group_id=group_id, topics=topics, error_code=ErrorCode.NONE)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
