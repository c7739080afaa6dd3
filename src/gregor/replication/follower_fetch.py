"""The leader's side of a follower's Fetch over all the partitions it names (seed 001), sans-IO.

Each partition is served by `Partition.fetch_for_follower`: the fetch offset becomes the
follower's remote LEO, which may move the high watermark (completing acks=all produces) and bring
the follower back into the ISR; a last fetched epoch that disagrees with the leader's log is
answered with the diverging epoch. Followers read up to the log end, not the high watermark.

A partition whose follower asks again from the same offset at the log end (each idle partition
of a follower's fetch) and whose high watermark did not move is left out of `effects`: nothing
changed that the host must carry out, and its next deadline can only have moved later (the
follower is caught up again), which the host takes when that deadline comes.

In a fetch session (`fetch_sessions`, KIP-227) every partition of the session is served but those
resting (settled, unchanged since), and the answer carries only those with something new for the
follower. The parked fetch of a session with resting partitions waits under the session's key too.

With nothing to send and no error, the answer may wait (`FollowerFetch.must_wait`): the host parks
it in `DelayedFetches` until records are appended to one of its partitions or its max wait ends,
then serves it again. An error or a diverging epoch is answered at once, since waiting would only
delay the follower's reaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterator

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, FetchResponse
from gregor.replication.effects import Effect
from gregor.replication.fetch_sessions import SessionFetch, SessionPartition, TopicKey
from gregor.replication.partition import Partition

_Topic = FetchResponse.FetchableTopicResponse
_Partition = FetchResponse.PartitionData


@dataclass
class FollowerFetch:
    """One serving of a follower's Fetch: the answer's topics, the partitions it read, and the
    effects of the partitions (acks=all completions, ISR proposals) for the host to carry out."""

    topics: list[_Topic] = field(default_factory=list)
    keys: list[Hashable] = field(default_factory=list)  # what a parked fetch waits under
    effects: list[tuple[Partition, list[Effect]]] = field(default_factory=list)
    bytes: int = 0
    urgent: bool = False
    session: SessionFetch | None = None
    topic_keys: list[TopicKey] = field(default_factory=list)  # each topic's session key

    def must_wait(self, request: FetchRequest) -> bool:
        return not self.urgent and self.bytes < max(request.min_bytes, 1) and request.max_wait_ms > 0

    def response(self) -> FetchResponse:
        """The answer; in a session, only the partitions it must carry (call once per answer sent)."""
        session = self.session
        if session is None:
            return FetchResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=self.topics)
        topics = []
        for key, topic in zip(self.topic_keys, self.topics):
            topic.partitions = [data for data in topic.partitions if session.select((key, data.partition_index), data)]
            if topic.partitions:
                topics.append(topic)
        return FetchResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=session.session.session_id,
                             responses=topics)


def _requested(request: FetchRequest, by_id: bool, session: SessionFetch | None, resting_too: bool
               ) -> Iterator[tuple[TopicKey, list[tuple[FetchRequest.FetchPartition, SessionPartition | None]]]]:
    """The partitions to serve by topic, with their place in the session: the request's, or the
    partitions of its session (all of them, or those not resting)."""
    if session is None:
        for fetch_topic in request.topics:
            yield (fetch_topic.topic_id if by_id else fetch_topic.topic), [(p, None) for p in fetch_topic.partitions]
        return
    for topic_key, cached in session.session.by_topic(resting_too).items():
        yield topic_key, [(entry.request, entry) for entry in cached]


def serve_follower_fetch(request: FetchRequest, replica_id: int, by_id: bool,
                         partition_of: Callable[[str, int], Partition | None],
                         topic_name: Callable[[uuid.UUID], str | None], now_ms: int,
                         session: SessionFetch | None = None) -> FollowerFetch:
    """Read every partition the follower asks for (topics by id from Fetch v13, else by name), or
    with `session` (`FetchSessions.open`) every partition of the fetch session."""
    served = FollowerFetch(session=session)
    incremental = session is not None and not session.full
    resting_too = True
    if session is not None:
        session.session.last_fetch_ms = now_ms
        if incremental and not session.session.full_serve_due(now_ms):
            resting_too = False
        else:
            session.session.wake_all()
    for topic_key, fetch_partitions in _requested(request, by_id, session, resting_too):
        name: str | None = None
        named = False
        partitions = []
        for fetch_partition, cached in fetch_partitions:
            if not named:
                name = topic_name(topic_key) if isinstance(topic_key, uuid.UUID) else topic_key
                named = True
            partition = partition_of(name, fetch_partition.partition) if name else None
            if partition is None:
                partitions.append(_Partition(
                    partition_index=fetch_partition.partition, high_watermark=-1, last_stable_offset=-1,
                    log_start_offset=-1, error_code=ErrorCode.UNKNOWN_TOPIC_ID if by_id and name is None
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, records=b""))
                served.urgent = True
                continue
            assert name is not None
            if incremental:
                at_end = partition.fetch_at_log_end(replica_id, fetch_partition, now_ms)
                if at_end is not None:  # an idle partition of the session: no answer to build unless news
                    effects, offsets = at_end
                    if effects is not None:
                        served.effects.append((partition, effects))
                    served.keys.append(partition.key)
                    if cached is None or not cached.knows(offsets):
                        partitions.append(partition.answer_at_log_end())
                    elif effects is None and session is not None and partition.settled_for(replica_id):
                        session.session.rest((topic_key, fetch_partition.partition), cached, partition,
                                             partition.remote[replica_id])
                    continue
            known = partition.remote.get(replica_id)
            idle = known is not None and known.log_end_offset == fetch_partition.fetch_offset == partition.log.log_end_offset
            high_watermark = partition.high_watermark
            data, effects = partition.fetch_for_follower(replica_id, fetch_partition, now_ms)
            if effects or not idle or partition.high_watermark != high_watermark:
                served.effects.append((partition, effects))
            partitions.append(data)
            served.keys.append(partition.key)
            served.bytes += len(data.records) if data.records else 0
            served.urgent = served.urgent or data.error_code != ErrorCode.NONE or data.diverging_epoch.epoch >= 0
        if incremental and not partitions:
            continue  # an answer in the session leaves out a topic with nothing to say
        topic = _Topic(topic="" if by_id else (name or ""), partitions=partitions)
        if by_id:
            assert isinstance(topic_key, uuid.UUID)
            topic.topic_id = topic_key
        served.topics.append(topic)
        served.topic_keys.append(topic_key)
    if session is not None and session.session.resting:
        served.keys.append(session.session.wake_key)
    return served
