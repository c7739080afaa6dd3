"""ElectLeaders (key 43), v0–v2 (KIP-460): preferred or unclean leader election, decided by the
active controller (`gregor.controller.replication_control.elect_leaders`) and committed to the
metadata log before the answer goes out. Broker-only nodes forward it; a combined node and a
controller decide it themselves.

v0 asks for PREFERRED elections (it has no election type); v1+ also UNCLEAN. No partition list
(null) means every partition, and the answer then leaves out partitions that need no election,
as Kafka's controller does. An unknown election type fails the whole request with
INVALID_REQUEST (top-level code from v1, every named partition). Gap: no authorization (Kafka
requires ALTER on the cluster).
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import ControllerResult
from gregor.controller.replication_control import ElectionType, elect_leaders
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse

API_KEY = 43
_Topic = ElectLeadersResponse.ReplicaElectionResult
_Partition = ElectLeadersResponse.PartitionResult
_MESSAGES = {ErrorCode.NONE: None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "No such topic or partition."}


def error_response(request: ElectLeadersRequest, code: int, message: str | None) -> ElectLeadersResponse:
    """Every named partition (and, from v1, the request) failed with `code`."""
    return ElectLeadersResponse(error_code=code, replica_election_results=[
        _Topic(topic=topic.topic, partition_result=[_Partition(partition_id=index, error_code=code,
                                                               error_message=message)
                                                    for index in topic.partitions])
        for topic in request.topic_partitions or ()])


async def handle(context: QuorumContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    server = context.quorum
    try:
        election_type = ElectionType(request.election_type)
    except ValueError:
        return error_response(request, ErrorCode.INVALID_REQUEST, f"Unknown election type {request.election_type}")
    topics = None if request.topic_partitions is None else \
        [(topic.topic, list(topic.partitions)) for topic in request.topic_partitions]

    def decide() -> ControllerResult:
        results, records = elect_leaders(server.image, election_type, topics)
        return ControllerResult(results, tuple(records))

    try:
        results = await server.submit(decide)
    except KafkaError as error:
        return error_response(request, error.code, str(error))
    return ElectLeadersResponse(replica_election_results=[
        _Topic(topic=name, partition_result=[
            _Partition(partition_id=index, error_code=error, error_message=_MESSAGES.get(error, error.name))
            for index, error in answers])
        for name, answers in results])


HANDLERS = [Handler(API_KEY, 0, 2, handle)]
