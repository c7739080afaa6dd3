"""DescribeProducers (key 61), v0: the producer state of partitions, from their leaders.

Each partition is answered by its leader from the log's producer state (Kafka's
activeProducerState): producer id, epoch, last sequence, last timestamp, the coordinator epoch
of its last transaction marker and the first offset of its open transaction (-1: none). A
partition the metadata does not have gets UNKNOWN_TOPIC_OR_PARTITION; one led or hosted by
another broker, NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

from gregor.broker.errors import error_code_of
from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeProducersRequest, DescribeProducersResponse

API_KEY = 61
MIN_VERSION, MAX_VERSION = 0, 0

_Topic = DescribeProducersResponse.TopicResponse
_Partition = DescribeProducersResponse.PartitionResponse
_Producer = DescribeProducersResponse.ProducerState


def handle(context: BrokerContext, request: DescribeProducersRequest) -> DescribeProducersResponse:
    topics = []
    readable = context.allowed_names(AclOperation.READ, ResourceType.TOPIC, {t.name for t in request.topics})
    for topic in request.topics:
        if topic.name not in readable:
            topics.append(_Topic(name=topic.name, partitions=[
                _Partition(partition_index=index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, active_producers=[])
                for index in topic.partition_indexes]))
            continue
        topics.append(_Topic(name=topic.name, partitions=[_describe(context, topic.name, index)
                                                          for index in topic.partition_indexes]))
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)


def _describe(context: BrokerContext, topic: str, index: int) -> _Partition:
    answer = _Partition(partition_index=index, error_code=ErrorCode.NONE, active_producers=[])
    partition = context.partitions.partition(topic, index)
    if partition is None:  # Kafka's getPartitionOrError: a partition of the cluster hosted elsewhere
        known = context.metadata.image.partition(topic, index) is not None
        answer.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return answer
    try:
        producers = partition.active_producers()
    except Exception as error:  # noqa: BLE001 - failures become the partition's error code
        answer.error_code, answer.error_message = error_code_of(error)
        return answer
    answer.active_producers = [
        _Producer(producer_id=producer_id, producer_epoch=entry.epoch, last_sequence=entry.last_sequence,
                  last_timestamp=entry.last_timestamp, coordinator_epoch=entry.coordinator_epoch,
                  current_txn_start_offset=entry.current_txn_first_offset)
        for producer_id, entry in sorted(producers.items())]
    return answer


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle)]
