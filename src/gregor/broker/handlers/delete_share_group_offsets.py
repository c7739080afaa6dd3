"""DeleteShareGroupOffsets (key 92), v0 (Kafka 4.1; a spec patch): an empty share group's state
forgotten on whole topics (`broker.share_offsets.delete_topics`: DeleteShareGroupState for each
partition), so it starts there at `share.auto.offset.reset` again.

Asked of the group's coordinator (NOT_COORDINATOR elsewhere). DELETE on the group
(GROUP_AUTHORIZATION_FAILED, top level) and READ on each topic (TOPIC_AUTHORIZATION_FAILED for
it) are needed, as Kafka; GROUP_ID_NOT_FOUND for an unknown group, NON_EMPTY_GROUP for one with
members, UNKNOWN_TOPIC_OR_PARTITION for an unknown topic.
"""

from __future__ import annotations

from gregor.broker import share_offsets
from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.share_group_offsets_common import group_error
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse

API_KEY = 92
_Topic = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic


def _refused(code: ErrorCode, message: str | None) -> DeleteShareGroupOffsetsResponse:
    return DeleteShareGroupOffsetsResponse(throttle_time_ms=0, error_code=code, error_message=message, responses=[])


async def handle(context: BrokerContext, request: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse:
    group_id = request.group_id
    refused = group_error(context, group_id, AclOperation.DELETE)
    if refused is not None:
        return _refused(*refused)
    names = list(dict.fromkeys(t.topic_name for t in request.topics))
    readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC, names)
    error, results = await share_offsets.delete_topics(context.shares, group_id, [n for n in names if n in readable])
    if error:
        return _refused(error, f"The share group {group_id} has members." if error == ErrorCode.NON_EMPTY_GROUP
                        else None)
    responses = []
    for name in names:
        topic_id = context.shares.topic_id(name)
        responses.append(_Topic(topic_name=name, topic_id=topic_id if topic_id is not None else _Topic().topic_id,
                                error_code=results.get(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
    return DeleteShareGroupOffsetsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, responses=responses)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
