"""ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments on a single-node
broker (broker and controller in one process): librdkafka's and kafka-python's admin clients and
raw requests at every version. One broker leads every partition it has, so elections are not
needed and the only valid reassignment keeps the partition where it is; the moves themselves are
in tests/cluster/test_leader_election.py."""

from __future__ import annotations

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from gregor.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
)

from tests.cluster.quorum import call

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def topic(broker):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("elect-t", 2, 1)])["elect-t"].result(20)
    return "elect-t"


def elect(broker, version: int, topics, election_type: int = 0) -> ElectLeadersResponse:
    named = None if topics is None else [ElectLeadersRequest.TopicPartitions(topic=name, partitions=parts)
                                         for name, parts in topics.items()]
    request = ElectLeadersRequest(election_type=election_type, timeout_ms=10_000, topic_partitions=named)
    return call(broker.port, request, version, ElectLeadersResponse)


def errors(response: ElectLeadersResponse) -> dict[tuple[str, int], int]:
    return {(result.topic, p.partition_id): p.error_code
            for result in response.replica_election_results for p in result.partition_result}


def test_librdkafka_preferred_election_is_not_needed_on_one_broker(broker, topic):
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    results = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0), TopicPartition(topic, 1),
                                                           TopicPartition("elect-none", 0)]).result(20)
    codes = {(tp.topic, tp.partition): error.code() if error else None for tp, error in results.items()}
    assert codes == {(topic, 0): ErrorCode.ELECTION_NOT_NEEDED, (topic, 1): ErrorCode.ELECTION_NOT_NEEDED,
                     ("elect-none", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_version_answers_per_partition(broker, topic, version):
    response = elect(broker, version, {topic: [0, 9]})
    assert errors(response) == {(topic, 0): ErrorCode.ELECTION_NOT_NEEDED,
                                (topic, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    everything = elect(broker, version, None)  # all partitions: those needing no election are left out
    assert errors(everything) == {} and topic in {r.topic for r in everything.replica_election_results}


def test_unclean_election_of_a_led_partition_is_not_needed_and_an_unknown_type_is_invalid(broker, topic):
    assert errors(elect(broker, 1, {topic: [1]}, election_type=1)) == {(topic, 1): ErrorCode.ELECTION_NOT_NEEDED}
    invalid = elect(broker, 2, {topic: [0]}, election_type=7)
    assert invalid.error_code == ErrorCode.INVALID_REQUEST
    assert errors(invalid) == {(topic, 0): ErrorCode.INVALID_REQUEST}


def test_kafka_python_reassignments_on_one_broker(broker, topic):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        results = admin.alter_partition_reassignments({TopicPartition(topic, 0): [1], TopicPartition(topic, 1): [2]})
        assert results[TopicPartition(topic, 0)] is None
        assert results[TopicPartition(topic, 1)] is InvalidReplicationAssignmentError  # broker 2 is not registered
        cancel = admin.alter_partition_reassignments({TopicPartition(topic, 0): None})
        assert cancel[TopicPartition(topic, 0)] is NoReassignmentInProgressError
        assert admin.list_partition_reassignments() == {}
        assert admin.list_partition_reassignments({topic: [0, 1]}) == {}
        response = admin.elect_leaders(0, {topic: [0]}, raise_errors=False)
        assert response.replica_election_results[0].partition_result[0].error_code == ErrorCode.ELECTION_NOT_NEEDED
    finally:
        admin.close()


def test_list_reassignments_raw(broker, topic):
    request = ListPartitionReassignmentsRequest(timeout_ms=5000, topics=None)
    response = call(broker.port, request, 0, ListPartitionReassignmentsResponse)
    assert (response.error_code, response.topics) == (ErrorCode.NONE, [])
