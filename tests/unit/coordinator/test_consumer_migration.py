"""Classic consumers in consumer groups, and groups moving between the protocols with members
(KIP-848's online upgrade and downgrade)."""

from __future__ import annotations

import pytest

from gregor.coordinator.consumer.classic_protocol import read_assignment, write_assignment
from gregor.coordinator.group_state import GroupState
from gregor.protocol.error_codes import ErrorCode
from tests.unit.coordinator.consumer_harness import T1, ConsumerHarness
from tests.unit.coordinator.harness import subscription

NAMES = {T1: "t1"}


@pytest.fixture
def h() -> ConsumerHarness:
    harness = ConsumerHarness()
    harness.set_topics(t1=4)
    return harness


def parts(*partitions: int):
    return {T1: frozenset(partitions)}


def classic_join(h: ConsumerHarness, member_id: str = "", **kwargs):
    return h.join_now(member_id=member_id, protocols=(("range", subscription("t1")),), **kwargs)


def test_a_classic_consumer_shares_a_consumer_group(h):
    assert h.cg("a", 0).assignment == parts(0, 1, 2, 3)
    required = classic_join(h)
    assert required.error is ErrorCode.MEMBER_ID_REQUIRED
    joined = classic_join(h, required.member_id)
    assert (joined.error, joined.generation_id, joined.protocol_name) == (ErrorCode.NONE, 2, "range")
    classic = joined.member_id
    synced = h.sync_now(classic, 2)
    assert read_assignment(synced.assignment, h.coordinator._consumer.topics) == {}, "a's partitions are not free"
    assert h.heartbeat(classic, 2) is ErrorCode.REBALANCE_IN_PROGRESS
    a = h.cg("a", 1, owned=parts(0, 1, 2, 3))
    a = h.cg("a", 1, owned=a.assignment)
    assert a.member_epoch == 2
    rejoined = classic_join(h, classic)
    synced = h.sync_now(classic, rejoined.generation_id)
    assert read_assignment(synced.assignment, h.coordinator._consumer.topics) == parts(2, 3)
    assert h.heartbeat(classic, 2) is ErrorCode.NONE
    assert h.heartbeat(classic, 1) is ErrorCode.ILLEGAL_GENERATION
    (left,) = h.coordinator.leave_group(group_id="g", members=[(classic, None, None)], now_ms=h.now)[0].members
    assert left.error is ErrorCode.NONE
    assert h.cg("a", 2, owned=parts(0, 1)).assignment == parts(0, 1, 2, 3)


def stable_classic_group(h: ConsumerHarness) -> list[str]:
    """Two classic members owning t1-0,1 and t1-2,3 at generation 1."""
    tokens = [h.join(protocols=(("range", subscription("t1")),), require_known=False) for _ in range(2)]
    h.advance_until(lambda: h.coordinator.group("g").state is GroupState.COMPLETING_REBALANCE)
    ids = [h.answer(token).member_id for token in tokens]
    leader = h.coordinator.group("g").leader_id
    assignments = {ids[0]: write_assignment(parts(0, 1), NAMES), ids[1]: write_assignment(parts(2, 3), NAMES)}
    h.sync(leader, 1, assignments=assignments)
    for member_id in ids:
        if member_id != leader:
            h.sync(member_id, 1)
    assert h.coordinator.group("g").state is GroupState.STABLE
    return ids


def test_a_consumer_protocol_member_upgrades_a_live_classic_group(h):
    first, second = stable_classic_group(h)
    token = h.token()
    h.apply(h.coordinator.commit_offsets(token, group_id="g", generation_id=1, member_id=first, group_instance_id=None,
                                         retention_time_ms=-1, offsets={("t1", 0): (9, -1, "")}, now_ms=h.now))
    newcomer = h.cg("new", 0)
    assert (newcomer.error, newcomer.assignment) == (ErrorCode.NONE, {}), "the classic members still own everything"
    group = h.coordinator.consumer_groups["g"]
    assert group.members[first].assigned_partitions == parts(0, 1) and group.members[first].member_epoch == 1
    assert h.heartbeat(first, 1) is ErrorCode.REBALANCE_IN_PROGRESS
    for member_id in (first, second):  # eager consumers rejoin owning nothing
        rejoined = classic_join(h, member_id)
        h.sync_now(member_id, rejoined.generation_id)
    newcomer = h.cg("new", 2, owned={})
    assert newcomer.assignment and sum(len(p) for p in newcomer.assignment.values()) == 1
    fetched = h.coordinator.fetch_offsets(group_id="g", partitions=[("t1", 0)], require_stable=False, now_ms=h.now)
    assert fetched.partitions[("t1", 0)].offset == 9, "the offsets carried over"
    # The group comes back as a consumer group with its classic members from its records.
    reloaded = ConsumerHarness(load=False)
    reloaded.set_topics(t1=4)
    for index in range(reloaded.config.offsets_topic_num_partitions):
        reloaded.apply(reloaded.coordinator.load_partition(index, h.log.get(index, []), reloaded.now))
    assert reloaded.coordinator.consumer_groups["g"].members == group.members
    assert reloaded.coordinator.group("g").state is GroupState.EMPTY, "only the offsets holder is classic"


def test_the_last_consumer_protocol_member_leaving_downgrades_the_group(h):
    first, second = stable_classic_group(h)
    h.cg("new", 0)
    assert h.cg("new", -1).error is ErrorCode.NONE
    assert "g" not in h.coordinator.consumer_groups
    group = h.coordinator.group("g")
    assert group.state is GroupState.PREPARING_REBALANCE and set(group.members) == {first, second}
    assert group.generation_id == 3 and group.protocol_name == "range"
    assert read_assignment(group.members[first].assignment, h.coordinator._consumer.topics) == parts(0, 1)
    assert h.heartbeat(first, 3) is ErrorCode.REBALANCE_IN_PROGRESS
    tokens = [h.join(member_id=member_id, protocols=(("range", subscription("t1")),)) for member_id in (first, second)]
    assert [h.answer(token).generation_id for token in tokens] == [4, 4]


def test_a_live_classic_group_that_cannot_be_read_is_not_upgraded(h):
    h.join(require_known=False, protocols=(("range", b"not a subscription"),))
    h.advance_until(lambda: h.coordinator.group("g").state is GroupState.COMPLETING_REBALANCE)
    refused = h.cg("new", 0)
    assert refused.error is ErrorCode.GROUP_ID_NOT_FOUND and "cannot be read" in refused.error_message
