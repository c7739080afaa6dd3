"""Fetch from a follower (replica id >= 0): the leader's side of replication (seed 001).

Each partition is served by `Partition.fetch_for_follower`: the fetch offset becomes the
follower's remote LEO, which may move the high watermark (completing acks=all produces) and
bring the follower back into the ISR; a last fetched epoch that disagrees with the leader's log
is answered with the diverging epoch. Followers read up to the log end, not the high watermark.
With nothing to send, the answer waits up to max_wait_ms for an append (the follower's next
fetch is its acknowledgement, so a quick answer keeps acks=all latency low). Topics are named
by id (the fetch versions Gregor's replica fetchers send); a follower of a partition this broker
does not lead gets NOT_LEADER_OR_FOLLOWER and waits for the new leader in the metadata.
"""

from __future__ import annotations

import asyncio
import time

from gregor.broker.handlers import BrokerContext
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, FetchResponse

_Topic = FetchResponse.FetchableTopicResponse
_Partition = FetchResponse.PartitionData


def replica_id_of(request: FetchRequest, version: int) -> int:
    """Who is fetching: a broker's id for a follower, -1 for a consumer (v15 moved the field)."""
    return request.replica_state.replica_id if version >= 15 else request.replica_id


def _read(context: BrokerContext, request: FetchRequest, replica_id: int,
          by_id: bool) -> tuple[list[_Topic], list[tuple[str, int]], int, bool]:
    """(topics, the partitions served, bytes, whether an answer must go now: an error or a
    diverging epoch, which waiting would only delay)."""
    host = context.partitions
    topics, keys, total, urgent = [], [], 0, False
    for fetch_topic in request.topics:
        name = context.metadata.topic_name(fetch_topic.topic_id) if by_id else fetch_topic.topic
        partitions = []
        for fetch_partition in fetch_topic.partitions:
            if not name or (partition := host.partition(name, fetch_partition.partition)) is None:
                partitions.append(_Partition(
                    partition_index=fetch_partition.partition, high_watermark=-1, last_stable_offset=-1,
                    log_start_offset=-1, error_code=ErrorCode.UNKNOWN_TOPIC_ID if by_id and name is None
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, records=b""))
                urgent = True
                continue
            data, effects = partition.fetch_for_follower(replica_id, fetch_partition, context.now_ms)
            host.apply(partition, effects)
            partitions.append(data)
            keys.append((name, fetch_partition.partition))
            total += len(data.records) if data.records else 0
            urgent = urgent or data.error_code != ErrorCode.NONE or data.diverging_epoch.epoch >= 0
        topic = _Topic(topic="" if by_id else fetch_topic.topic, partitions=partitions)
        if by_id:
            topic.topic_id = fetch_topic.topic_id
        topics.append(topic)
    return topics, keys, total, urgent


def handle_replica_fetch(context: BrokerContext, request: FetchRequest, replica_id: int):
    by_id = context.version >= 13
    topics, keys, total, urgent = _read(context, request, replica_id, by_id)
    if urgent or total >= max(request.min_bytes, 1) or request.max_wait_ms <= 0:
        return _response(topics)
    return _wait(context, request, replica_id, by_id, keys, context.partitions.fetch_waiters.marks(keys))


async def _wait(context: BrokerContext, request: FetchRequest, replica_id: int, by_id: bool,
                keys: list[tuple[str, int]], read_at: dict) -> FetchResponse:
    waiters = context.partitions.fetch_waiters
    woken = asyncio.Event()
    # registered since the first read: an append in between (this runs a loop iteration later)
    # wakes it at once rather than holding its acks=all produce for max_wait_ms
    handle = waiters.register(keys, woken.set, since=read_at)
    try:
        try:
            await asyncio.wait_for(woken.wait(), request.max_wait_ms / 1000)
        except asyncio.TimeoutError:
            pass
        context.now_ms = int(time.time() * 1000)
        topics, _, _, _ = _read(context, request, replica_id, by_id)
        return _response(topics)
    finally:
        waiters.cancel(keys, handle)


def _response(topics: list[_Topic]) -> FetchResponse:
    return FetchResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=topics)
