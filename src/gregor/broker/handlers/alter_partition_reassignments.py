"""AlterPartitionReassignments (key 45), v0 (KIP-455): start, replace or cancel (replicas null)
partition reassignments, decided by the active controller
(`gregor.controller.reassignment.alter_reassignments`); all records of a request are committed
together before the answer. Broker-only nodes forward it; a combined node and a controller
decide it themselves.

The answer only says the reassignment was accepted: the new replicas catch up in the
background, and the leader's ISR change that brings the last of them in sync completes it
(AlterPartition). ListPartitionReassignments shows the running ones. Errors per partition as
Kafka's: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty, duplicate or unregistered
brokers; a cancel that needs an unclean election the topic does not allow),
NO_REASSIGNMENT_IN_PROGRESS (cancelling nothing). Gaps: no authorization (Kafka requires ALTER on
the cluster) and no replication throttles (Kafka's leader/follower.replication.throttled.*).
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import ControllerResult
from gregor.controller.reassignment import alter_reassignments
from gregor.controller.replication_control import unclean_policy
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
)

API_KEY = 45
_Topic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
_Partition = AlterPartitionReassignmentsResponse.ReassignablePartitionResponse


def error_response(request: AlterPartitionReassignmentsRequest, code: int,
                   message: str | None) -> AlterPartitionReassignmentsResponse:
    """The whole request failed with `code` (every partition too, which clients read)."""
    return AlterPartitionReassignmentsResponse(error_code=code, error_message=message, responses=[
        _Topic(name=topic.name, partitions=[_Partition(partition_index=p.partition_index, error_code=code,
                                                       error_message=message) for p in topic.partitions])
        for topic in request.topics])


async def handle(context: QuorumContext,
                 request: AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse:
    server = context.quorum
    targets = [(topic.name, p.partition_index, None if p.replicas is None else list(p.replicas))
               for topic in request.topics for p in topic.partitions]

    def decide() -> ControllerResult:
        results, records = alter_reassignments(server.image, targets,
                                               unclean_policy(server.image, server.config.originals))
        return ControllerResult(results, tuple(records))

    try:
        results = await server.submit(decide)
    except KafkaError as error:
        return error_response(request, error.code, str(error))
    by_topic: dict[str, list] = {}
    for result in results:
        by_topic.setdefault(result.topic, []).append(_Partition(
            partition_index=result.partition, error_code=result.error, error_message=result.message))
    return AlterPartitionReassignmentsResponse(error_message=None, responses=[
        _Topic(name=name, partitions=partitions) for name, partitions in by_topic.items()])


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
