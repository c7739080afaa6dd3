"""Fetch from a follower (replica id >= 0): the leader's side of replication (seed 001).

The request is served by the replication layer (`serve_follower_fetch`): each partition's fetch
offset becomes the follower's remote LEO, which may move the high watermark (completing acks=all
produces) and bring the follower back into the ISR; a diverging epoch or an error is answered at
once. With nothing to send, the fetch parks in the broker's fetch purgatory until records are
appended to one of its partitions, the partition changes leadership or goes, or max_wait_ms ends
(the follower's next fetch is its acknowledgement, so a quick answer keeps acks=all latency low),
and is then served once more. From v7 a follower's fetch may belong to an incremental fetch session
(KIP-227, `replication.fetch_sessions`, kept by the hosted partitions): it names only the
partitions whose fetch position changed, every partition of the session is served, and the answer
carries only those with something new. A move of the high watermark does not wake it, as in Kafka: the
follower learns it with its next fetch, and waking every follower on every move would double the
replication traffic. Topics are named by id (the fetch versions Gregor's replica fetchers send);
a follower of a partition this broker does not lead gets NOT_LEADER_OR_FOLLOWER and waits for the
new leader in the metadata.

Only brokers may fetch as followers (a follower's fetch moves the high watermark and the ISR;
CVE-2018-1288). Kafka requires the ClusterAction permission on the cluster and answers every
partition of a follower fetch without it with TOPIC_AUTHORIZATION_FAILED (`KafkaApis
.handleFetchRequest`, Apache Kafka 2.x to 4.x); so does Gregor when an authorizer is configured
(a principal in `super.users` or holding CLUSTER_ACTION, `authorization.py`). Besides, a follower
fetch that arrives on any listener other than `inter.broker.listener.name` gets that same answer.
Without an authorizer and with a single listener (the default) brokers and clients share it, as
they share Kafka's.
"""

from __future__ import annotations

from typing import Hashable

from gregor.broker.handlers import BrokerContext
from gregor.broker.network import LaterAnswer
from gregor.metadata.acls import AclOperation
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, FetchResponse
from gregor.replication.fetch_sessions import SessionFetch
from gregor.replication.follower_fetch import FollowerFetch, serve_follower_fetch

SESSION_VERSION = 7  # the first Fetch with session ids and epochs (KIP-227)


def replica_id_of(request: FetchRequest, version: int) -> int:
    """Who is fetching: a broker's id for a follower, -1 for a consumer (v15 moved the field)."""
    return request.replica_state.replica_id if version >= 15 else request.replica_id


def _serve(context: BrokerContext, request: FetchRequest, replica_id: int,
           session: SessionFetch | None) -> FollowerFetch:
    host = context.partitions
    served = serve_follower_fetch(request, replica_id, context.version >= 13, host.partition,
                                  context.metadata.topic_name, context.now_ms, session)
    for partition, effects in served.effects:
        host.apply(partition, effects)
    return served


def handle_replica_fetch(context: BrokerContext, request: FetchRequest,
                         replica_id: int) -> FetchResponse | LaterAnswer:
    if (context.connection.listener != context.metadata.config.inter_broker_listener
            or not context.allowed(AclOperation.CLUSTER_ACTION)):
        return _not_authorized(request, context.version >= 13)
    session = None
    if context.version >= SESSION_VERSION:
        opened = context.partitions.fetch_sessions.open(request, replica_id, context.version >= 13)
        if isinstance(opened, FetchResponse):
            return opened
        session = opened
    served = _serve(context, request, replica_id, session)
    if not served.must_wait(request):
        return served.response()
    return _when_due(context, request, replica_id, session, served.keys)


def _when_due(context: BrokerContext, request: FetchRequest, replica_id: int, session: SessionFetch | None,
              keys: list[Hashable]) -> LaterAnswer:
    purgatory = context.partitions.replica_fetches

    def serve() -> FetchResponse:
        context.now_ms = purgatory.now_ms()
        return _serve(context, request, replica_id, session).response()

    return purgatory.answer_when_due(keys, purgatory.now_ms() + request.max_wait_ms, serve)


def _not_authorized(request: FetchRequest, by_id: bool) -> FetchResponse:
    topics = []
    for fetch_topic in request.topics:
        topic = FetchResponse.FetchableTopicResponse(topic="" if by_id else fetch_topic.topic, partitions=[
            FetchResponse.PartitionData(partition_index=p.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                        high_watermark=-1, last_stable_offset=-1, log_start_offset=-1, records=b"")
            for p in fetch_topic.partitions])
        if by_id:
            topic.topic_id = fetch_topic.topic_id
        topics.append(topic)
    return FetchResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=topics)
