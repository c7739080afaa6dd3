"""TxnOffsetCommit in the group coordinator: offsets pending per producer, visible only after the
COMMIT marker, dropped on ABORT, UNSTABLE_OFFSET_COMMIT for require_stable fetches meanwhile,
pending again after a reload of a partition whose transaction has no marker yet."""

from __future__ import annotations

from gregor.coordinator import GroupCoordinatorConfig
from gregor.coordinator.results import OffsetCommitResult
from gregor.protocol.error_codes import ErrorCode
from tests.unit.coordinator.harness import Harness

TP = ("in", 0)
PID = 42


def txn_commit(harness: Harness, offsets, group: str = "g", generation: int = -1, member_id: str = "",
               producer_id: int = PID) -> tuple[OffsetCommitResult, object]:
    token = harness.token("txn")
    effects = harness.apply(harness.coordinator.commit_transactional_offsets(
        token, group_id=group, producer_id=producer_id, producer_epoch=3, generation_id=generation,
        member_id=member_id, group_instance_id=None, offsets=offsets, now_ms=harness.now))
    return harness.answer(token), effects


def committed(harness: Harness, group: str = "g", stable: bool = False):
    return harness.fetch(group=group, partitions=[TP], require_stable=stable).partitions[TP]


def test_offsets_visible_only_after_commit_marker():
    harness = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=1))
    result, effects = txn_commit(harness, {TP: (10, -1, "m")})
    assert result.errors == {TP: ErrorCode.NONE}
    (append,) = effects[:1]
    assert (append.producer_id, append.producer_epoch) == (PID, 3)  # the producer's transactional batch
    assert committed(harness).offset == -1
    assert committed(harness, stable=True).error is ErrorCode.UNSTABLE_OFFSET_COMMIT
    harness.apply(harness.coordinator.complete_transaction(0, PID + 1, True, harness.now))  # someone else's
    assert committed(harness).offset == -1
    harness.apply(harness.coordinator.complete_transaction(0, PID, True, harness.now))
    assert (committed(harness).offset, committed(harness).metadata) == (10, "m")
    assert committed(harness, stable=True).error is ErrorCode.NONE


def test_abort_marker_drops_offsets():
    harness = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=1))
    txn_commit(harness, {TP: (10, -1, None)})
    harness.apply(harness.coordinator.complete_transaction(0, PID, False, harness.now))
    assert committed(harness).offset == -1
    assert committed(harness, stable=True).error is ErrorCode.NONE


def test_member_and_generation_checked_when_given():
    """Kafka's ClassicGroup.validateOffsetCommit for a transaction (and ILLEGAL_GENERATION for a
    generation of a group that does not exist, which is not created then)."""
    harness = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=1))
    result, _ = txn_commit(harness, {TP: (1, -1, None)}, generation=4, member_id="nobody")
    assert result.errors == {TP: ErrorCode.ILLEGAL_GENERATION}
    assert "g" not in harness.coordinator.groups
    result, _ = txn_commit(harness, {TP: (1, -1, None)}, member_id="left-already")
    assert result.errors == {TP: ErrorCode.NONE}, "an Empty group takes a commit without a generation"
    (member, _other), generation, _leader = harness.form_group(2)
    result, _ = txn_commit(harness, {TP: (1, -1, None)}, generation=generation, member_id="nobody")
    assert result.errors == {TP: ErrorCode.UNKNOWN_MEMBER_ID}
    result, _ = txn_commit(harness, {TP: (1, -1, None)}, generation=generation + 1, member_id=member)
    assert result.errors == {TP: ErrorCode.ILLEGAL_GENERATION}
    result, _ = txn_commit(harness, {TP: (1, -1, None)}, generation=generation, member_id=member)
    assert result.errors == {TP: ErrorCode.NONE}


def test_failed_write_leaves_nothing_pending():
    harness = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=1), auto_append=False)
    token = harness.token("txn")
    harness.apply(harness.coordinator.commit_transactional_offsets(
        token, group_id="g", producer_id=PID, producer_epoch=0, generation_id=-1, member_id="",
        group_instance_id=None, offsets={TP: (5, -1, None)}, now_ms=harness.now))
    harness.complete_appends(ErrorCode.NOT_ENOUGH_REPLICAS)
    assert harness.answer(token).errors == {TP: ErrorCode.COORDINATOR_NOT_AVAILABLE}
    harness.apply(harness.coordinator.complete_transaction(0, PID, True, harness.now))
    assert committed(harness).offset == -1


def test_reload_keeps_open_transaction_pending():
    harness = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=1))
    txn_commit(harness, {TP: (7, -1, None)})
    written = list(harness.log[0])
    harness.apply(harness.coordinator.load_partition(0, [], harness.now, {PID: written}))
    assert committed(harness, stable=True).error is ErrorCode.UNSTABLE_OFFSET_COMMIT
    harness.apply(harness.coordinator.complete_transaction(0, PID, True, harness.now))
    assert committed(harness).offset == 7
    harness.apply(harness.coordinator.unload_partition(0, harness.now))
    assert harness.coordinator.complete_transaction(0, PID, True, harness.now) == []
