"""ConsumerGroupHeartbeat (key 68), v0–v1: the KIP-848 consumer protocol's one request.

Joining, heartbeating, reconciling and leaving are all this request (MemberEpoch 0 joins, -1
leaves, -2 a static member leaves for a while). The answer waits for the group's records to be
written. v1 adds SubscribedTopicRegex and requires the client to choose its member id (KIP-1082);
v0 members may send an empty one and get an id from the coordinator. While the cluster's
finalized `group.version` is 0 the protocol is off: UNSUPPORTED_VERSION, as Kafka answers. As in
Kafka, the member needs READ on the group (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on every topic
it subscribes to by name (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.coordinator.consumer.assignment import normalized
from gregor.coordinator.consumer.heartbeat import HeartbeatRequest
from gregor.coordinator.consumer.results import HeartbeatResult
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.metadata.features import GROUP_VERSION
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

API_KEY = 68
_Response = ConsumerGroupHeartbeatResponse


def handle(context: BrokerContext, request: ConsumerGroupHeartbeatRequest):
    if context.metadata.image.features.get(GROUP_VERSION, 0) < 1:
        return _response(HeartbeatResult(ErrorCode.UNSUPPORTED_VERSION,
                                         "The consumer group protocol is off (group.version 0)."))
    if not context.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _response(HeartbeatResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    names = request.subscribed_topic_names or []
    if names and len(context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names)) < len(set(names)):
        return _response(HeartbeatResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                         "The member is not authorized to describe every subscribed topic."))
    if request.group_id in context.shares.groups.groups:  # one group-id namespace for every group type
        return _response(HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND,
                                         f"Group {request.group_id} is not a consumer group."))
    owned = None
    if request.topic_partitions is not None:
        owned = normalized({topic.topic_id: topic.partitions for topic in request.topic_partitions})
    heartbeat = HeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id, member_epoch=request.member_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=(None if request.subscribed_topic_names is None
                                else tuple(request.subscribed_topic_names)),
        subscribed_topic_regex=request.subscribed_topic_regex if context.version >= 1 else None,
        server_assignor=request.server_assignor, owned=owned, client_id=context.header.client_id or "",
        client_host="/" + context.connection.peer.rsplit(":", 1)[0], version=context.version)
    runtime = context.groups
    return runtime.park(lambda token: runtime.coordinator.consumer_group_heartbeat(token, heartbeat, context.now_ms),
                        HeartbeatResult, _response)


def _response(result: HeartbeatResult) -> ConsumerGroupHeartbeatResponse:
    assignment = None
    if result.assignment is not None:
        assignment = _Response.Assignment(topic_partitions=[
            _Response.TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
            for topic_id, partitions in sorted(result.assignment.items())])
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0, error_code=result.error, error_message=result.error_message, member_id=result.member_id,
        member_epoch=result.member_epoch, heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)


HANDLERS = [Handler(API_KEY, 0, 1, handle)]
