"""ReadShareGroupState (key 84), v0: a share-partition's persisted state, asked of the leader of its
`__share_group_state` partition by the leader of the topic-partition (inter-broker).

StartOffset -1 with no batches means the group starts at `share.auto.offset.reset` (no state is
persisted, or InitializeShareGroupState gave none, in the StateEpoch answered); NOT_COORDINATOR
from a broker that does not lead the state partition, CLUSTER_AUTHORIZATION_FAILED without
CLUSTER_ACTION (brokers' own request, as in Kafka). The leader epoch is not checked (see
docs/share-groups.md).
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import ReadShareGroupStateRequest, ReadShareGroupStateResponse

API_KEY = 84
_Result = ReadShareGroupStateResponse.ReadStateResult
_Partition = ReadShareGroupStateResponse.PartitionResult
_Batch = ReadShareGroupStateResponse.StateBatch


def handle(context: BrokerContext, request: ReadShareGroupStateRequest) -> ReadShareGroupStateResponse:
    if not context.allowed(AclOperation.CLUSTER_ACTION):
        return ReadShareGroupStateResponse(results=[_Result(topic_id=topic.topic_id, partitions=[
            _Partition(partition=p.partition, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, start_offset=-1)
            for p in topic.partitions]) for topic in request.topics])
    results = []
    for topic in request.topics:
        partitions = []
        for asked in topic.partitions:
            answer = _Partition(partition=asked.partition, error_code=ErrorCode.NONE, state_epoch=0, start_offset=-1,
                                state_batches=[])
            try:
                snapshot = context.shares.store.serve_read((request.group_id, topic.topic_id, asked.partition))
            except KafkaError as error:
                answer.error_code, answer.error_message = error.code, str(error)
                snapshot = None
            if snapshot is not None:
                answer.state_epoch, answer.start_offset = snapshot.state_epoch, snapshot.start_offset
                answer.state_batches = [_Batch(first_offset=b.first_offset, last_offset=b.last_offset,
                                               delivery_state=int(b.state), delivery_count=b.delivery_count)
                                        for b in snapshot.batches]
            partitions.append(answer)
        results.append(_Result(topic_id=topic.topic_id, partitions=partitions))
    return ReadShareGroupStateResponse(results=results)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
