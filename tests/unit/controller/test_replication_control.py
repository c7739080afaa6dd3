"""The controller's replica and leader decisions: fencing, unfencing, AlterPartition checks and
preferred-leader election, each replayed into a real metadata image (the simulator in
tests/sim/replication runs the same functions under random faults)."""

from __future__ import annotations

import uuid

import pytest

from gregor.controller.replication_control import (
    PartitionState, ReplicaState, alter_partition, elect_preferred_leaders, fence_broker, partition_state,
    replica_state, unfence_broker,
)
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.metadata_records.broker_registration_change_record import (
    BrokerRegistrationChangeRecord,
)

from tests.unit.controller.images import CLEAN, TOPIC_ID, UNCLEAN, cluster, partition, replay


def test_fencing_the_leader_moves_leadership_to_the_next_isr_replica_and_bumps_the_leader_epoch():
    image = replay(cluster(), fence_broker(cluster(), 1, CLEAN))
    after = partition(image)
    assert (after.leader, after.isr, after.leader_epoch, after.partition_epoch) == (2, (2, 3), 4, 9)
    assert image.brokers[1].fenced and replica_state(image, 1) is ReplicaState.OFFLINE


def test_fencing_a_follower_shrinks_the_isr_and_keeps_the_leader_epoch():
    after = partition(replay(cluster(), fence_broker(cluster(), 3, CLEAN)))
    assert (after.leader, after.isr, after.leader_epoch, after.partition_epoch) == (1, (1, 2), 3, 9)


def test_the_last_isr_member_stays_when_it_is_fenced_and_the_partition_goes_offline():
    image = cluster(isr=(1,), live=(1, 2, 3))
    image = replay(image, fence_broker(image, 1, CLEAN))
    after = partition(image)
    assert (after.leader, after.isr, after.leader_epoch) == (-1, (1,), 4)
    assert partition_state(after) is PartitionState.OFFLINE
    image = replay(image, unfence_broker(image, 2, CLEAN))  # 2 is not in the ISR: no clean election
    assert partition(image).leader == -1
    image = replay(image, fence_broker(image, 2, CLEAN))
    image = replay(image, unfence_broker(image, 1, CLEAN))
    assert (partition(image).leader, partition(image).isr, partition(image).leader_epoch) == (1, (1,), 5)


def test_unclean_election_picks_a_live_replica_outside_the_isr_and_makes_it_the_whole_isr():
    image = cluster(isr=(1,), live=(1, 2, 3))
    after = partition(replay(image, fence_broker(image, 1, UNCLEAN)))
    assert (after.leader, after.isr) == (2, (2,))


def test_a_broker_in_controlled_shutdown_is_not_elected():
    image = cluster()
    image = replay(image, [BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=5, in_controlled_shutdown=1)])
    assert partition(replay(image, fence_broker(image, 1, CLEAN))).leader == 3


def test_fencing_twice_or_an_unknown_broker_changes_nothing():
    image = replay(cluster(), fence_broker(cluster(), 3, CLEAN))
    assert fence_broker(image, 3, CLEAN) == [] and fence_broker(image, 9, CLEAN) == []
    assert unfence_broker(cluster(), 1, CLEAN) == []


def test_an_accepted_isr_change_is_ordered_by_replicas_and_bumps_only_the_partition_epoch():
    image = cluster(isr=(1,))
    error, record = alter_partition(image, 1, TOPIC_ID, 0, 3, 8, (3, 1))
    assert error == ErrorCode.NONE
    after = partition(replay(image, [record]))
    assert (after.isr, after.leader, after.leader_epoch, after.partition_epoch) == ((1, 3), 1, 3, 9)


@pytest.mark.parametrize("leader, leader_epoch, partition_epoch, isr, expected", [
    (2, 3, 8, (1, 2), ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (1, 2, 8, (1, 2), ErrorCode.FENCED_LEADER_EPOCH),
    (1, 3, 7, (1, 2), ErrorCode.INVALID_UPDATE_VERSION),
    (1, 3, 8, (2, 3), ErrorCode.INELIGIBLE_REPLICA),  # the leader left itself out
    (1, 3, 8, (1, 4), ErrorCode.INELIGIBLE_REPLICA),  # 4 is not a replica
    (1, 3, 8, (1, 1), ErrorCode.INELIGIBLE_REPLICA),
])
def test_stale_or_invalid_isr_proposals_are_refused(leader, leader_epoch, partition_epoch, isr, expected):
    assert alter_partition(cluster(), leader, TOPIC_ID, 0, leader_epoch, partition_epoch, isr) == (expected, None)


def test_a_fenced_broker_cannot_join_the_isr_and_unknown_partitions_are_named():
    image = cluster(isr=(1, 2), live=(1, 2, 4))
    assert alter_partition(image, 1, TOPIC_ID, 0, 3, 8, (1, 2, 3)) == (ErrorCode.INELIGIBLE_REPLICA, None)
    assert alter_partition(image, 1, uuid.UUID(int=99), 0, 3, 8, (1,))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert alter_partition(image, 1, TOPIC_ID, 5, 3, 8, (1,))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_preferred_leader_election_moves_leadership_back_only_when_it_can():
    image = cluster(leader=2)
    results, records = elect_preferred_leaders(image, [("t", 0), ("t", 1), ("nope", 0)])
    assert results == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    moved = replay(image, records)
    assert (partition(moved).leader, partition(moved).leader_epoch) == (1, 4)
    assert elect_preferred_leaders(moved, [("t", 0)])[0] == {("t", 0): ErrorCode.ELECTION_NOT_NEEDED}
    out_of_isr = cluster(isr=(2, 3), leader=2)
    assert elect_preferred_leaders(out_of_isr, [("t", 0)]) == ({("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}, [])


def test_state_machine_names_follow_the_seeds():
    image = cluster()
    assert partition_state(partition(image)) is PartitionState.ONLINE
    assert partition_state(None) is PartitionState.NON_EXISTENT
    assert replica_state(image, 1) is ReplicaState.ONLINE and replica_state(image, 42) is ReplicaState.NEW
