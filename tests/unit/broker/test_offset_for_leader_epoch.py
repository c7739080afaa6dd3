"""The OffsetForLeaderEpoch handler over real partitions whose leader-epoch caches hold several
epochs: requests encoded at every version, answers decoded by kafka-python's codec."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochResponse as KafkaPythonResponse

from gregor.broker.handlers import offset_for_leader_epoch
from gregor.metadata.image import PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import OffsetForLeaderEpochRequest

from tests.unit.replication.helpers import Replica

_Topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
_Partition = OffsetForLeaderEpochRequest.OffsetForLeaderPartition
VERSIONS = range(offset_for_leader_epoch.MIN_VERSION, offset_for_leader_epoch.MAX_VERSION + 1)


class _Image:
    def __init__(self, known: set[tuple[str, int]]) -> None:
        self.known = known

    def partition(self, topic: str, index: int):
        return PartitionRegistration(replicas=(1,), isr=(1,), leader=1, leader_epoch=0, partition_epoch=0) \
            if (topic, index) in self.known else None


class _Hosted:
    """The PartitionHost side the handler reads: the partitions with a replica here."""

    def __init__(self, hosted: dict[tuple[str, int], Replica]) -> None:
        self.hosted = hosted

    def partition(self, topic: str, index: int):
        replica = self.hosted.get((topic, index))
        return replica.partition if replica is not None else None


class _Metadata:
    """The MetadataView side the handler reads: the image."""

    def __init__(self, image: _Image) -> None:
        self.image = image


class _Node:
    """A broker as the handler sees it: its hosted partitions and its metadata."""

    def __init__(self, hosted: dict[tuple[str, int], Replica], known: set[tuple[str, int]] = frozenset()) -> None:
        self.partitions = _Hosted(hosted)
        self.metadata = _Metadata(_Image(set(hosted) | set(known)))


class _Context:
    def __init__(self, node: _Node, version: int) -> None:
        self.partitions = node.partitions
        self.metadata = node.metadata
        self.version = version

    def allowed(self, *_resource: object) -> bool:
        return True  # no authorizer: every check passes

    def allowed_names(self, _operation: object, _resource_type: object, names: set[str]) -> set[str]:
        return set(names)


def ask(node: _Node, version: int, partitions: dict[str, list[_Partition]], replica_id: int = -1):
    """One request through the wire at `version`: encoded and decoded by Gregor's codec, answered by
    the handler, the answer encoded by Gregor and decoded by kafka-python."""
    request = OffsetForLeaderEpochRequest(replica_id=replica_id, topics=[
        _Topic(topic=name, partitions=parts) for name, parts in partitions.items()])
    decoded = OffsetForLeaderEpochRequest.decode(request.encode(version), version)
    response = offset_for_leader_epoch.handle(_Context(node, version), decoded)
    return KafkaPythonResponse.decode(bytes(response.encode(version)), version=version)


def answers(response) -> dict[tuple[str, int], tuple[int, int, int]]:
    return {(topic.topic, p.partition): (p.error_code, p.leader_epoch, p.end_offset)
            for topic in response.topics for p in topic.partitions}


@pytest.fixture
def leader(tmp_path) -> Replica:
    """A single-replica leader through epochs 0, 2 and 5: epoch 0 holds offsets 0-2, epoch 2
    offsets 3-4, epoch 5 offset 5 (log end offset 6)."""
    replica = Replica(tmp_path, 1, replicas=(1,))
    for partition_epoch, (epoch, values) in enumerate([(0, b"abc"), (2, b"de"), (5, b"f")]):
        replica.apply(1, epoch, (1,), partition_epoch)
        for value in values:
            replica.produce(bytes([value]), acks=1)
    assert [(e.epoch, e.start_offset) for e in replica.log.leader_epoch_cache.entries] == [(0, 0), (2, 3), (5, 5)]
    return replica


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_answers_where_each_epoch_ends(leader, version):
    node = _Node({("t", 0): leader})
    # (requested epoch) -> (largest known epoch <= it, where that epoch ends)
    expected = {0: (0, 3), 1: (0, 3), 2: (2, 5), 4: (2, 5), 5: (5, 6), 6: (-1, -1), -1: (-1, -1)}
    for epoch, (end_epoch, end_offset) in expected.items():
        response = ask(node, version, {"t": [_Partition(partition=0, current_leader_epoch=5, leader_epoch=epoch)]})
        (topic,) = response.topics
        (answer,) = topic.partitions
        assert topic.topic == "t" and answer.partition == 0 and answer.error_code == 0
        assert answer.end_offset == end_offset, epoch
        # v0 has no leader epoch in the answer: kafka-python decodes the field's default
        assert answer.leader_epoch == (end_epoch if version >= 1 else -1), epoch
        if version >= 2:
            assert response.throttle_time_ms == 0


def test_the_current_epoch_ends_at_the_log_end_offset_as_the_log_grows(leader):
    node = _Node({("t", 0): leader})
    latest = [_Partition(partition=0, leader_epoch=5)]
    assert answers(ask(node, 4, {"t": latest}))[("t", 0)] == (0, 5, 6)
    leader.produce(b"g", acks=1)
    assert answers(ask(node, 4, {"t": latest}))[("t", 0)] == (0, 5, 7)
    assert answers(ask(node, 4, {"t": [_Partition(partition=0, leader_epoch=2)]}))[("t", 0)] == (0, 2, 5)


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_topics_and_partitions_are_answered_per_partition(leader, version):
    node = _Node({("t", 0): leader})
    response = ask(node, version, {
        "t": [_Partition(partition=7, leader_epoch=0), _Partition(partition=0, leader_epoch=0)],
        "missing": [_Partition(partition=0, leader_epoch=0), _Partition(partition=1, leader_epoch=0)]})
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert answers(response) == {
        ("t", 7): (unknown, -1, -1), ("t", 0): (0, 0 if version >= 1 else -1, 3),
        ("missing", 0): (unknown, -1, -1), ("missing", 1): (unknown, -1, -1)}


@pytest.mark.parametrize(("current", "code"), [
    (2, ErrorCode.FENCED_LEADER_EPOCH), (0, ErrorCode.FENCED_LEADER_EPOCH),
    (6, ErrorCode.UNKNOWN_LEADER_EPOCH), (5, ErrorCode.NONE), (-1, ErrorCode.NONE)])
@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_current_leader_epoch_fences_stale_and_future_askers(leader, version, current, code):
    response = ask(_Node({("t", 0): leader}), version,
                   {"t": [_Partition(partition=0, current_leader_epoch=current, leader_epoch=2)]})
    assert answers(response)[("t", 0)] == ((code, -1, -1) if code != ErrorCode.NONE else (0, 2, 5))


@pytest.mark.parametrize("version", [0, 1])
def test_before_v2_there_is_no_current_leader_epoch_to_fence_with(leader, version):
    # v0/v1 carry no current leader epoch: whatever the asker thinks, the leader answers
    response = ask(_Node({("t", 0): leader}), version,
                   {"t": [_Partition(partition=0, current_leader_epoch=2, leader_epoch=2)]})
    assert answers(response)[("t", 0)] == (0, 2 if version == 1 else -1, 5)


@pytest.mark.parametrize("replica_id", [-1, 3])
def test_only_the_leader_answers_consumers_and_replicas_alike(tmp_path, replica_id):
    follower = Replica(tmp_path, 2, replicas=(1, 2, 3))
    follower.apply(1, 4, (1, 2, 3), 0)
    node = _Node({("t", 0): follower}, known={("t", 1)})
    response = ask(node, 4, {"t": [_Partition(partition=0, current_leader_epoch=4, leader_epoch=4),
                                     _Partition(partition=1, leader_epoch=0)]}, replica_id=replica_id)
    # t-0: a follower here; t-1: in the metadata but with no replica on this broker
    not_leader = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert answers(response) == {("t", 0): (not_leader, -1, -1), ("t", 1): (not_leader, -1, -1)}


def test_a_follower_asking_the_leader_gets_the_same_answer_as_a_consumer(leader):
    node = _Node({("t", 0): leader})
    request = {"t": [_Partition(partition=0, current_leader_epoch=5, leader_epoch=1)]}
    assert answers(ask(node, 4, request, replica_id=2)) == answers(ask(node, 4, request, replica_id=-1)) \
        == {("t", 0): (0, 0, 3)}
