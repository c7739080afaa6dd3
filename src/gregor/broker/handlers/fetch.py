"""Fetch (key 1), v0–v17, for consumers.

Long-poll: when fewer than `min_bytes` are available the fetch parks in the broker's consumer
fetch purgatory (`fetch_purgatory`, over the replication layer's `DelayedFetches`) for up to
`max_wait_ms`, as Kafka's DelayedFetch: each time the high watermark of a partition it reads
moves, `EnoughBytes` counts the bytes now below it from log positions, without reading them, and
the fetch stays parked while they are short of `min_bytes`. Its partitions are read once more
when it is due (enough bytes, its max wait, a partition that changed leader or went); a fetch
whose every partition is caught up (`_FetchPlan.caught_up`) parks without a read first. Fetch
sessions (KIP-227) are answered sessionless: a full fetch gets session id 0, which tells the
client that no session was created, and an incremental fetch for an unknown session gets
FETCH_SESSION_ID_NOT_FOUND so the client falls back to full fetches. v13+ name topics by id.
v0–v3 receive legacy message sets, down-converted. isolation_level (v4+): READ_COMMITTED reads stop
at the last stable offset and carry the aborted transactions overlapping them; a parked
read_committed fetch counts only the bytes below the last stable offset, which moves when the high
watermark passes a transaction's marker (that is when its partition's fetches are checked).
Large reads go out as file regions (sendfile); small ones are copied, which is cheaper.
Consumers are served by the partition leader only (NOT_LEADER_OR_FOLLOWER elsewhere; Kafka's
default replica selector). Follower fetches (replica id >= 0) are the leader's side of
replication, in `replica_fetch`. A partition answered with an error carries an empty record set,
never a null one, as Kafka sends it: librdkafka rejects a null set as a malformed response and
so never sees the error (it kept fetching from a deposed leader instead of refreshing metadata).
A consumer needs READ on each topic (TOPIC_AUTHORIZATION_FAILED otherwise, for its partitions).
The records of an answer count against the client's `consumer_byte_rate`: a client over it gets
an empty answer with `throttle_time_ms` (the records stay for its next fetch) and its connection
muted for that long, as Kafka's throttled fetch response.
"""

from __future__ import annotations

from gregor.broker.client_quotas import throttled
from gregor.broker.errors import error_code_of
from gregor.broker.handlers import BrokerContext, Handler
from gregor.broker.handlers.replica_fetch import handle_replica_fetch, replica_id_of
from gregor.broker.network import FileRegion, LaterAnswer
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, FetchResponse
from gregor.records.convert import downconvert
from gregor.replication.delayed_fetch import EnoughBytes
from gregor.replication.partition import READ_UNCOMMITTED, Partition

API_KEY = 1
# Below this, one pread and a write cost less than a sendfile round through the event loop.
SENDFILE_MIN_BYTES = 64 * 1024
MIN_VERSION, MAX_VERSION = 0, 17

_Topic = FetchResponse.FetchableTopicResponse
_Partition = FetchResponse.PartitionData
_Aborted = FetchResponse.AbortedTransaction


class _FetchPlan:
    """One request's partitions: read when it arrives and, if it waits, once more when it is due."""

    def __init__(self, context: BrokerContext, request: FetchRequest) -> None:
        self.context = context
        self.request = request
        self.by_id = context.version >= 13
        self.isolation_level = request.isolation_level if context.version >= 4 else READ_UNCOMMITTED
        self.keys: list[tuple[str, int]] = []
        self.bytes_by_topic: dict[str, int] = {}
        self._read: list[tuple[Partition, FetchRequest.FetchPartition]] = []
        self.readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC, {
            name for topic in request.topics if (name := self._name(topic))})

    def _name(self, fetch_topic: FetchRequest.FetchTopic) -> str | None:
        """The topic's name: by id from v13 (None for an unknown id)."""
        return self.context.metadata.topic_name(fetch_topic.topic_id) if self.by_id else fetch_topic.topic

    def _leader_epoch(self, fetch_partition: FetchRequest.FetchPartition) -> int:
        """The leader epoch the consumer names (v9+), -1 for none."""
        return fetch_partition.current_leader_epoch if self.context.version >= 9 else -1

    def read(self) -> tuple[list[_Topic], int, bool]:
        host = self.context.partitions
        request = self.request
        version = self.context.version
        remaining = request.max_bytes if version >= 3 else 0x7FFFFFFF
        if self.context.quotas.enabled:
            quota_bytes = self.context.quotas.fetch_max_bytes(self.context.connection.principal,
                                                              self.context.header.client_id)
            remaining = remaining if quota_bytes is None else min(remaining, quota_bytes)
        total = 0
        any_error = False
        topics = []
        self.keys = []
        self.bytes_by_topic = {}
        self._read = []
        for fetch_topic in request.topics:
            name = self._name(fetch_topic)
            partitions = []
            for fetch_partition in fetch_topic.partitions:
                response = _Partition(partition_index=fetch_partition.partition, high_watermark=-1,
                                      last_stable_offset=-1, log_start_offset=-1,
                                      aborted_transactions=[] if version >= 4 else None, records=b"")
                partitions.append(response)
                if name and name not in self.readable:
                    response.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    any_error = True
                    continue
                if not name or (partition := host.partition(name, fetch_partition.partition)) is None:
                    response.error_code = (ErrorCode.UNKNOWN_TOPIC_ID if self.by_id and name is None
                                           else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    any_error = True
                    continue
                self.keys.append(partition.key)
                response.high_watermark = partition.high_watermark
                response.last_stable_offset = partition.last_stable_offset
                response.log_start_offset = partition.log_start_offset
                limit = min(fetch_partition.partition_max_bytes, remaining)
                data: bytes | FileRegion
                try:
                    info = partition.read_records(
                        fetch_partition.fetch_offset, max(limit, 0),
                        self._leader_epoch(fetch_partition), self.isolation_level, total == 0)
                    if version <= 3:
                        data = downconvert(info.read_bytes(), 1 if version >= 2 else 0,
                                           host.max_uncompressed_bytes) if info.slices else b""
                    elif info.size >= SENDFILE_MIN_BYTES:
                        data = FileRegion(info.slices)
                    else:
                        data = info.read_bytes()
                except Exception as error:  # noqa: BLE001 - failures become partition errors
                    response.error_code, _ = error_code_of(error)
                    any_error = True
                    continue
                self._read.append((partition, fetch_partition))
                if info.aborted_transactions:
                    response.aborted_transactions = [
                        _Aborted(producer_id=txn.producer_id, first_offset=txn.first_offset)
                        for txn in info.aborted_transactions]
                response.records = data
                total += len(data)
                remaining -= len(data)
                self.bytes_by_topic[name] = self.bytes_by_topic.get(name, 0) + len(data)
            topic = _Topic(topic="" if self.by_id else fetch_topic.topic, partitions=partitions)
            if self.by_id:
                topic.topic_id = fetch_topic.topic_id
            topics.append(topic)
        return topics, total, any_error

    def caught_up(self) -> bool:
        """Whether every partition the fetch names has nothing to read and no error to report
        (`Partition.consumer_read_is_empty`): then it parks at once, without building the empty
        answer `read` would, and reads when it is due. Else nothing is kept: `read` decides."""
        host = self.context.partitions
        keys: list[tuple[str, int]] = []
        reads: list[tuple[Partition, FetchRequest.FetchPartition]] = []
        for fetch_topic in self.request.topics:
            name = self._name(fetch_topic)
            if not name or name not in self.readable:
                return False
            for fetch_partition in fetch_topic.partitions:
                partition = host.partition(name, fetch_partition.partition)
                if partition is None or not partition.consumer_read_is_empty(
                        fetch_partition.fetch_offset, self._leader_epoch(fetch_partition), self.isolation_level):
                    return False
                keys.append(partition.key)
                reads.append((partition, fetch_partition))
        self.keys, self._read = keys, reads
        return bool(keys)

    def enough_bytes(self) -> EnoughBytes:
        """When the fetch parks: the condition that makes it due, over the partitions just read."""
        condition = EnoughBytes(self.request.min_bytes)
        for partition, fetch_partition in self._read:
            condition.add(partition, fetch_partition.fetch_offset, fetch_partition.partition_max_bytes,
                          self.isolation_level)
        return condition


def handle(context: BrokerContext, request: FetchRequest):
    replica_id = replica_id_of(request, context.version)
    if replica_id >= 0:
        return handle_replica_fetch(context, request, replica_id)
    if context.version >= 7 and request.session_id != 0:
        return FetchResponse(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[])
    plan = _FetchPlan(context, request)
    if request.max_wait_ms > 0 and request.min_bytes > 0 and plan.caught_up():
        return _when_due(plan, request.max_wait_ms)
    topics, total, any_error = plan.read()
    if any_error or total >= request.min_bytes or request.max_wait_ms <= 0 or not plan.keys:
        return _response(plan, topics)
    return _when_due(plan, request.max_wait_ms)


def _when_due(plan: _FetchPlan, max_wait_ms: int) -> LaterAnswer:
    """The answer, read once the fetch is due. It parks in the same step as the read that found
    too little, so no move of a high watermark falls in between."""
    purgatory = plan.context.partitions.consumer_fetches

    def read() -> object:
        plan.context.now_ms = purgatory.now_ms()
        topics, _, _ = plan.read()
        return _response(plan, topics)

    return purgatory.answer_when_due(plan.keys, purgatory.now_ms() + max_wait_ms, read, plan.enough_bytes())


def _response(plan: _FetchPlan, topics: list[_Topic]) -> object:
    context = plan.context
    if context.quotas.enabled:
        throttle_ms = context.quotas.record_fetch(context.connection.principal, context.header.client_id,
                                                  sum(plan.bytes_by_topic.values()), context.now_ms)
        if throttle_ms:
            return throttled(FetchResponse(throttle_time_ms=throttle_ms, error_code=ErrorCode.NONE, session_id=0,
                                           responses=[]), throttle_ms)
    context.metrics.fetched(plan.bytes_by_topic)
    return FetchResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=topics)


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle)]
