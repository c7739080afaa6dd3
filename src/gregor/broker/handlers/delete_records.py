"""DeleteRecords (key 21), v0–v2: advance a partition's log start offset (-1: to the high watermark).

Each topic needs DELETE (TOPIC_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

from gregor.broker.errors import error_code_of
from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse

API_KEY = 21
_Partition = DeleteRecordsResponse.DeleteRecordsPartitionResult


def handle(context: BrokerContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    topics = []
    deletable = context.allowed_names(AclOperation.DELETE, ResourceType.TOPIC, {t.name for t in request.topics})
    for topic in request.topics:
        partitions = []
        for requested in topic.partitions:
            result = _Partition(partition_index=requested.partition_index, low_watermark=-1)
            partition = context.partitions.partition(topic.name, requested.partition_index)
            if topic.name not in deletable:
                result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    result.low_watermark = partition.delete_records_before(requested.offset)
                except Exception as error:  # noqa: BLE001 - failures become partition errors
                    result.error_code, _ = error_code_of(error)
            partitions.append(result)
        topics.append(DeleteRecordsResponse.DeleteRecordsTopicResult(name=topic.name, partitions=partitions))
    return DeleteRecordsResponse(throttle_time_ms=0, topics=topics)


HANDLERS = [Handler(API_KEY, 0, 2, handle)]
