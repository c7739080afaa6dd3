"""ListPartitionReassignments (key 46), v0 (KIP-455): the running reassignments of the named
partitions (null: of all), with their replicas and the replicas being added and removed.

Answered by the active controller from its committed image, as Kafka's controller answers it
(broker-only nodes forward it; a standby controller answers NOT_CONTROLLER); partitions that are
unknown or not being reassigned are left out. Gap: no authorization (Kafka requires DESCRIBE on
the cluster).
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import ControllerResult
from gregor.controller.reassignment import list_reassignments
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
)

API_KEY = 46
_Topic = ListPartitionReassignmentsResponse.OngoingTopicReassignment
_Partition = ListPartitionReassignmentsResponse.OngoingPartitionReassignment


def error_response(request: ListPartitionReassignmentsRequest, code: int,
                   message: str | None) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(error_code=code, error_message=message)


async def handle(context: QuorumContext,
                 request: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
    server = context.quorum
    topics = None if request.topics is None else \
        {topic.name: list(topic.partition_indexes) for topic in request.topics}
    try:
        ongoing = await server.submit(lambda: ControllerResult(list_reassignments(server.image, topics)))
    except KafkaError as error:
        return error_response(request, error.code, str(error))
    by_topic: dict[str, list] = {}
    for item in ongoing:
        by_topic.setdefault(item.topic, []).append(_Partition(
            partition_index=item.partition, replicas=list(item.replicas), adding_replicas=list(item.adding),
            removing_replicas=list(item.removing)))
    return ListPartitionReassignmentsResponse(error_message=None, topics=[
        _Topic(name=name, partitions=partitions) for name, partitions in by_topic.items()])


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
