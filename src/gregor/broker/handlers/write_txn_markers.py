"""WriteTxnMarkers (key 27), v0–v1: the transaction coordinator's COMMIT/ABORT markers, inter-broker.

Each marker is appended as leader to each of its partitions (`Partition.append_txn_marker`), which
closes the producer's transaction there, and waited for as Kafka writes markers: acks=all, so a
partition is answered once the high watermark passes its marker (REQUEST_TIMED_OUT after Kafka's
request.timeout.ms default, 30 s; NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas).
Per-partition errors as Kafka's: UNKNOWN_TOPIC_OR_PARTITION (not in the metadata),
NOT_LEADER_OR_FOLLOWER (led or hosted elsewhere),
INVALID_PRODUCER_EPOCH (a marker older than the producer's epoch), TRANSACTION_COORDINATOR_FENCED
(from an older coordinator epoch than the partition's last marker of that producer).
`__consumer_offsets` partitions get their markers too; once one is replicated the handler calls
the broker's `transaction_completed` service (when one is wired), where the group coordinator
makes the producer's pending transactional offset commits visible or drops them (Kafka's
GroupCoordinator.onTransactionCompleted).

Only brokers may send it (it rewrites any partition's transaction state). Kafka requires the
ClusterAction permission and answers every partition CLUSTER_AUTHORIZATION_FAILED without it;
until Gregor has ACLs a broker is recognised by the listener, as for follower fetches
(`replica_fetch`): a request on any listener other than `inter.broker.listener.name` gets that
answer. With a single listener brokers and clients share it.
"""

from __future__ import annotations

import asyncio
import functools

from gregor.broker.errors import error_code_of
from gregor.broker.group_runtime import OFFSETS_TOPIC
from gregor.broker.handlers import BrokerContext, Handler, TransactionCompleted
from gregor.broker.network import Pipelined
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

API_KEY = 27
MIN_VERSION, MAX_VERSION = 0, 1
MARKER_TIMEOUT_MS = 30_000  # Kafka's request.timeout.ms default, with which its broker writes markers

_Marker = WriteTxnMarkersRequest.WritableTxnMarker
_MarkerResult = WriteTxnMarkersResponse.WritableTxnMarkerResult
_TopicResult = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
_PartitionResult = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult


def handle(context: BrokerContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse | Pipelined:
    if context.connection.listener != context.metadata.config.inter_broker_listener \
            or not context.allowed(AclOperation.CLUSTER_ACTION):
        return _answer_all(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    results = []
    waiting: list[asyncio.Future[None]] = []
    for marker in request.markers:
        topics = []
        for topic in marker.topics:
            partitions = [_write(context, marker, topic.name, index, waiting) for index in topic.partition_indexes]
            topics.append(_TopicResult(name=topic.name, partitions=partitions))
        results.append(_MarkerResult(producer_id=marker.producer_id, topics=topics))
    response = WriteTxnMarkersResponse(markers=results)
    if not waiting:
        return response
    return Pipelined(_when_all_done(response, waiting))


def _write(context: BrokerContext, marker: _Marker, topic: str, index: int,
           waiting: list[asyncio.Future[None]]) -> _PartitionResult:
    answer = _PartitionResult(partition_index=index, error_code=ErrorCode.NONE)
    host = context.partitions
    partition = host.partition(topic, index)
    if partition is None:  # Kafka's getPartitionOrError: a partition of the cluster hosted elsewhere
        known = context.metadata.image.partition(topic, index) is not None
        answer.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return answer
    try:
        info = partition.append_txn_marker(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                                           marker.transaction_result, context.now_ms)
    except Exception as error:  # noqa: BLE001 - every failure becomes the partition's error code
        answer.error_code, _ = error_code_of(error)
        return answer
    replicated: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
    host.on_leader_append(partition, partition.await_replication(info, replicated, context.now_ms,
                                                                 MARKER_TIMEOUT_MS))
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    completed = context.transaction_completed if topic == OFFSETS_TOPIC else None
    replicated.add_done_callback(functools.partial(_settle, answer, done, completed, marker, index))
    waiting.append(done)
    return answer


def _settle(answer: _PartitionResult, done: asyncio.Future[None], completed: TransactionCompleted | None,
            marker: _Marker, index: int,
            replicated: asyncio.Future[ErrorCode]) -> None:
    """A marker's replication ended: its error (if any) is the partition's answer; a replicated
    marker of a `__consumer_offsets` partition is reported to the group coordinator's seam."""
    code = ErrorCode.REQUEST_TIMED_OUT if replicated.cancelled() else replicated.result()
    answer.error_code = code
    if code == ErrorCode.NONE and completed is not None:
        completed(marker.producer_id, index, marker.transaction_result)
    if not done.done():
        done.set_result(None)


def _when_all_done(response: WriteTxnMarkersResponse,
                   waiting: list[asyncio.Future[None]]) -> asyncio.Future[WriteTxnMarkersResponse]:
    answered: asyncio.Future[WriteTxnMarkersResponse] = asyncio.get_running_loop().create_future()
    left = [len(waiting)]

    def one_done(_: asyncio.Future[None]) -> None:
        left[0] -= 1
        if not left[0] and not answered.done():
            answered.set_result(response)

    for future in waiting:
        future.add_done_callback(one_done)
    return answered


def _answer_all(request: WriteTxnMarkersRequest, code: ErrorCode) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(markers=[
        _MarkerResult(producer_id=marker.producer_id, topics=[
            _TopicResult(name=topic.name, partitions=[_PartitionResult(partition_index=index, error_code=code)
                                                      for index in topic.partition_indexes])
            for topic in marker.topics])
        for marker in request.markers])


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle)]
