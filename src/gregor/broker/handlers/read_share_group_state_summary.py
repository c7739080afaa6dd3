"""ReadShareGroupStateSummary (key 87), v0: a share-partition's start offset and state epoch,
without its in-flight batches, from the leader of its `__share_group_state` partition, for the
group's coordinator (inter-broker; DescribeShareGroupOffsets and lag).

StartOffset -1 and StateEpoch 0 mean no state is persisted; NOT_COORDINATOR from a broker that
does not lead the state partition, CLUSTER_AUTHORIZATION_FAILED without CLUSTER_ACTION. The
leader epoch is not checked (see docs/share-groups.md).
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse

API_KEY = 87
_Result = ReadShareGroupStateSummaryResponse.ReadStateSummaryResult
_Partition = ReadShareGroupStateSummaryResponse.PartitionResult


def handle(context: BrokerContext,
           request: ReadShareGroupStateSummaryRequest) -> ReadShareGroupStateSummaryResponse:
    allowed = context.allowed(AclOperation.CLUSTER_ACTION)
    results = []
    for topic in request.topics:
        partitions = []
        for asked in topic.partitions:
            answer = _Partition(partition=asked.partition, error_code=ErrorCode.NONE, state_epoch=0, start_offset=-1)
            if not allowed:
                answer.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            else:
                try:
                    answer.start_offset, answer.state_epoch = context.shares.store.serve_summary(
                        (request.group_id, topic.topic_id, asked.partition))
                except KafkaError as error:
                    answer.error_code, answer.error_message = error.code, str(error)
            partitions.append(answer)
        results.append(_Result(topic_id=topic.topic_id, partitions=partitions))
    return ReadShareGroupStateSummaryResponse(results=results)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
