"""Partition reassignment (KIP-455) as the controller decides it: start, completion by the
leader's ISR change, cancellation, validation, and what ListPartitionReassignments shows; each
step replayed into a real metadata image."""

from __future__ import annotations

from gregor.controller.reassignment import alter_reassignments, list_reassignments, reassignment_replicas
from gregor.controller.replication_control import alter_partition, elect_preferred_leaders
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.metadata_records.partition_change_record import PartitionChangeRecord

from tests.unit.controller.images import CLEAN, TOPIC_ID, UNCLEAN, cluster, partition, replay


def reassign(image, target, policy=CLEAN):
    results, records = alter_reassignments(image, [("t", 0, target)], policy)
    assert [r.error for r in results] == [ErrorCode.NONE], results
    return replay(image, records)


def state(image):
    p = partition(image)
    return p.replicas, p.isr, p.leader, p.adding_replicas, p.removing_replicas


def test_replicas_are_the_target_then_the_removed_ones_with_adding_and_removing_sorted():
    assert reassignment_replicas((1, 2, 3), (4, 3, 5)) == ((4, 3, 5, 1, 2), (1, 2), (4, 5))


def test_a_move_starts_with_the_union_and_completes_when_the_leaders_isr_holds_every_target_replica():
    image = reassign(cluster(), [2, 3, 4])
    assert state(image) == ((2, 3, 4, 1), (1, 2, 3), 1, (4,), (1,))
    assert partition(image).leader_epoch == 3  # nothing dropped yet: the leader epoch stays
    [ongoing] = list_reassignments(image, None)
    assert (ongoing.topic, ongoing.partition, ongoing.replicas, ongoing.adding, ongoing.removing) == \
        ("t", 0, (2, 3, 4, 1), (4,), (1,))
    error, record = alter_partition(image, 1, TOPIC_ID, 0, 3, 9, (1, 2, 3, 4))
    assert error == ErrorCode.NEW_LEADER_ELECTED  # the leader was being removed: 2 takes over
    done = replay(image, [record])
    assert state(done) == ((2, 3, 4), (2, 3, 4), 2, (), ())
    assert partition(done).leader_epoch == 4
    assert list_reassignments(done, None) == []


def test_an_isr_that_lacks_a_target_replica_does_not_complete():
    image = reassign(cluster(), [2, 3, 4])
    error, record = alter_partition(image, 1, TOPIC_ID, 0, 3, 9, (1, 2))
    assert error == ErrorCode.NONE
    assert state(replay(image, [record])) == ((2, 3, 4, 1), (2, 1), 1, (4,), (1,))  # ISR in replica order


def test_completion_that_keeps_the_leader_answers_none_and_still_bumps_the_leader_epoch():
    image = reassign(cluster(), [1, 2, 4])
    error, record = alter_partition(image, 1, TOPIC_ID, 0, 3, 9, (1, 2, 3, 4))
    assert error == ErrorCode.NONE
    done = replay(image, [record])
    assert state(done) == ((1, 2, 4), (1, 2, 4), 1, (), ())
    assert partition(done).leader_epoch == 4  # replica 3 was dropped: its fetches are fenced


def test_dropping_or_reordering_in_sync_replicas_completes_at_once():
    shrunk = reassign(cluster(), [2, 1])
    assert state(shrunk) == ((2, 1), (1, 2), 1, (), ())
    assert partition(shrunk).leader_epoch == 4
    reordered = reassign(cluster(), [3, 2, 1])
    assert state(reordered) == ((3, 2, 1), (1, 2, 3), 1, (), ())
    assert partition(reordered).leader_epoch == 3
    results, records = elect_preferred_leaders(reordered, [("t", 0)])
    assert results == {("t", 0): ErrorCode.NONE} and partition(replay(reordered, records)).leader == 3


def test_cancelling_drops_the_adding_replicas_and_keeps_the_removed_ones():
    image = reassign(cluster(), [2, 3, 4])
    cancelled = reassign(image, None)
    assert state(cancelled) == ((2, 3, 1), (1, 2, 3), 1, (), ())
    assert partition(cancelled).leader_epoch == 4


def test_a_cancel_that_needs_an_unclean_election_is_refused_unless_the_topic_allows_it():
    image = reassign(cluster(replicas=(1,)), [4, 2])
    assert state(image) == ((4, 2, 1), (1,), 1, (2, 4), (1,))
    image = replay(image, [PartitionChangeRecord(topic_id=TOPIC_ID, partition_id=0, isr=[4], leader=4)])
    results, _ = alter_reassignments(image, [("t", 0, None)], CLEAN)
    assert results[0].error == ErrorCode.INVALID_REPLICA_ASSIGNMENT and "unclean" in results[0].message
    assert state(reassign(image, None, UNCLEAN)) == ((1,), (1,), 1, (), ())


def test_invalid_targets_unknown_partitions_and_cancelling_nothing_are_refused():
    image = cluster()
    results, records = alter_reassignments(image, [("t", 0, []), ("t", 0, [1, 1]), ("t", 0, [9]),
                                                   ("t", 7, [1]), ("nope", 0, [1]), ("t", 0, None)], CLEAN)
    assert [r.error for r in results] == [ErrorCode.INVALID_REPLICA_ASSIGNMENT] * 3 + [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * 2 + [ErrorCode.NO_REASSIGNMENT_IN_PROGRESS]
    assert records == []
    assert "broker 9" in results[2].message


def test_a_partition_named_twice_gets_the_second_target_on_top_of_the_first():
    image = cluster()
    results, records = alter_reassignments(image, [("t", 0, [2, 3, 4]), ("t", 0, None)], CLEAN)
    assert [r.error for r in results] == [ErrorCode.NONE, ErrorCode.NONE] and len(records) == 2
    assert state(replay(image, records)) == ((2, 3, 1), (1, 2, 3), 1, (), ())


def test_listing_named_partitions_leaves_out_unknown_and_settled_ones():
    image = reassign(cluster(), [2, 3, 4])
    assert [o.partition for o in list_reassignments(image, {"t": [0, 5], "nope": [0]})] == [0]
    assert list_reassignments(cluster(), {"t": [0]}) == []
