"""OffsetFetch (key 9), v0–v9: committed offsets of one group (v0–v7) or several (v8+).

v2+ may ask for all partitions (null topics) and carry a top-level error; v0–v1 put a group
error on every requested partition instead. v7+ can require stable offsets. v9 names the member
and its epoch, which a consumer-protocol (KIP-848) group checks (UNKNOWN_MEMBER_ID,
STALE_MEMBER_EPOCH). A group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED); requested topics
without DESCRIBE get TOPIC_AUTHORIZATION_FAILED, and are left out of an all-partitions answer.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import OffsetFetchRequest, OffsetFetchResponse

API_KEY = 9
Row = tuple[int, int, int, str, ErrorCode]


def _answer(context: BrokerContext, group_id: str, topics, require_stable: bool, member_id: str | None = None,
            member_epoch: int = -1) -> tuple[ErrorCode, dict[str, list[Row]]]:
    """The group's top-level error and, per topic, (partition, offset, leader epoch, metadata, error)."""
    wanted = None if topics is None else [(t.name, index) for t in topics for index in t.partition_indexes]
    rows: dict[str, list[Row]] = {}
    if not context.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        if context.version >= 2 or wanted is None:
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, rows
        for name, index in wanted:
            rows.setdefault(name, []).append((index, -1, -1, "", ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return ErrorCode.NONE, rows
    result = context.groups.coordinator.fetch_offsets(group_id=group_id, partitions=wanted,
                                                      require_stable=require_stable, now_ms=context.now_ms,
                                                      member_id=member_id, member_epoch=member_epoch)
    if result.error:
        if context.version >= 2 or wanted is None:
            return result.error, rows
        for name, index in wanted:
            rows.setdefault(name, []).append((index, -1, -1, "", result.error))
        return ErrorCode.NONE, rows
    names = {name for name, _ in wanted} if wanted is not None else {name for name, _ in result.partitions}
    described = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    for name, index in wanted if wanted is not None else sorted(result.partitions):
        if name not in described:
            if wanted is not None:
                rows.setdefault(name, []).append((index, -1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        found = result.partitions.get((name, index))
        rows.setdefault(name, []).append((index, -1, -1, "", ErrorCode.NONE) if found is None else
                                         (index, found.offset, found.leader_epoch, found.metadata, found.error))
    return ErrorCode.NONE, rows


def handle(context: BrokerContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    require_stable = context.version >= 7 and request.require_stable
    if context.version >= 8:
        groups = []
        for group in request.groups:
            member = (group.member_id, group.member_epoch) if context.version >= 9 else (None, -1)
            error, rows = _answer(context, group.group_id, group.topics, require_stable, *member)
            groups.append(OffsetFetchResponse.OffsetFetchResponseGroup(group_id=group.group_id, error_code=error, topics=[
                OffsetFetchResponse.OffsetFetchResponseTopics(name=name, partitions=[
                    OffsetFetchResponse.OffsetFetchResponsePartitions(
                        partition_index=index, committed_offset=offset, committed_leader_epoch=epoch,
                        metadata=metadata, error_code=partition_error)
                    for index, offset, epoch, metadata, partition_error in partition_rows])
                for name, partition_rows in rows.items()]))
        return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
    error, rows = _answer(context, request.group_id, request.topics, require_stable)
    return OffsetFetchResponse(throttle_time_ms=0, error_code=error, topics=[
        OffsetFetchResponse.OffsetFetchResponseTopic(name=name, partitions=[
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=index, committed_offset=offset, committed_leader_epoch=epoch, metadata=metadata,
                error_code=partition_error)
            for index, offset, epoch, metadata, partition_error in partition_rows])
        for name, partition_rows in rows.items()])


HANDLERS = [Handler(API_KEY, 0, 9, handle)]
