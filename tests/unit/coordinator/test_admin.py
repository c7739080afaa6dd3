"""DescribeGroups, ListGroups, DeleteGroups, and giving up a `__consumer_offsets` partition."""

from __future__ import annotations

from gregor.coordinator import GroupState
from gregor.coordinator.offsets_records import decode_key
from gregor.coordinator.results import GroupOverview, MemberDescription
from gregor.protocol.error_codes import ErrorCode

from .harness import Harness, subscription


def test_describe_a_stable_group_with_metadata_and_assignments() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2, protocols=[("range", subscription("t"))])
    description, = h.coordinator.describe_groups(["g"])
    assert (description.error, description.state, description.protocol_type, description.protocol) == (
        ErrorCode.NONE, "Stable", "consumer", "range")
    assert description.members == tuple(
        MemberDescription(member_id, None, f"c{i}", "/127.0.0.1", subscription("t"), member_id.encode())
        for i, member_id in enumerate(ids))


def test_describe_a_rebalancing_group_leaves_out_metadata() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    h.join(member_id=leader, client_id="c0")
    description, = h.coordinator.describe_groups(["g"])
    assert (description.state, description.protocol) == ("PreparingRebalance", "")
    assert {(m.metadata, m.assignment) for m in description.members} == {(b"", b"")}


def test_describe_unknown_groups_and_errors() -> None:
    h = Harness()
    unknown, empty_id = h.coordinator.describe_groups(["nope", ""])
    assert (unknown.error, unknown.state, unknown.members) == (ErrorCode.NONE, "Dead", ())
    assert (empty_id.error, empty_id.state) == (ErrorCode.NONE, "Dead")
    elsewhere, = Harness(load=False).coordinator.describe_groups(["g"])
    assert (elsewhere.error, elsewhere.state) == (ErrorCode.NOT_COORDINATOR, "")


def test_list_groups_with_filters() -> None:
    h = Harness()
    h.form_group(1, group="stable")
    h.commit_now({("t", 0): (1, -1, "")}, group="simple")
    everything = h.coordinator.list_groups()
    assert everything.error is ErrorCode.NONE
    assert set(everything.groups) == {GroupOverview("stable", "consumer", "Stable"),
                                      GroupOverview("simple", "", "Empty")}
    assert [g.group_id for g in h.coordinator.list_groups(["EMPTY"]).groups] == ["simple"]
    assert [g.group_id for g in h.coordinator.list_groups(["stable", "dead"]).groups] == ["stable"]
    assert len(h.coordinator.list_groups(types_filter=["Classic"]).groups) == 2
    assert h.coordinator.list_groups(types_filter=["consumer"]).groups == ()


def test_list_groups_while_loading() -> None:
    h = Harness(load=False)
    h.coordinator.begin_load(3)
    assert h.coordinator.list_groups().error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_delete_groups() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(1, group="emptied")
    h.commit_now({("t", 0): (1, -1, "")}, group="emptied", generation=generation, member_id=leader)
    h.leave(leader, group="emptied")
    h.form_group(1, group="busy")
    h.commit_now({("t", 0): (1, -1, "")}, group="simple")
    errors, effects = h.coordinator.delete_groups(["emptied", "busy", "simple", "missing", "emptied"], h.now)
    h.apply(effects)
    assert errors == {"emptied": ErrorCode.NONE, "busy": ErrorCode.NON_EMPTY_GROUP, "simple": ErrorCode.NONE,
                      "missing": ErrorCode.GROUP_ID_NOT_FOUND}
    assert h.coordinator.group("emptied") is h.coordinator.group("simple") is None
    assert h.coordinator.group("busy").state is GroupState.STABLE
    tombstones = [(type(decode_key(key)).__name__, decode_key(key).group)
                  for effect in effects for key, value in effect.records if value is None]
    # The offset-only group never had a generation, so it has no group record to delete.
    assert tombstones == [("OffsetCommitKey", "emptied"), ("GroupMetadataKey", "emptied"),
                          ("OffsetCommitKey", "simple")]
    assert h.fetch(group="emptied", partitions=[("t", 0)]).partitions[("t", 0)].offset == -1


def test_unloading_a_partition_answers_parked_requests_with_not_coordinator() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    parked = h.join(member_id=leader, client_id="c0")
    partition = h.coordinator.partition_for("g")
    h.apply(h.coordinator.unload_partition(partition, h.now))
    result = h.answer(parked)
    assert (result.error, result.member_id) == (ErrorCode.NOT_COORDINATOR, leader)
    assert h.coordinator.group("g") is None
    assert h.heartbeat(ids[1], generation) is ErrorCode.NOT_COORDINATOR
    assert h.coordinator.next_deadline() is not None  # only the offset expiration timer is left
    h.advance(24 * 3600 * 1000)
    assert h.coordinator.group("g") is None


def test_unloading_answers_parked_syncs() -> None:
    h = Harness(auto_append=False)
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    leader, follower = (h.answer(token) for token in tokens)
    follower_sync = h.sync(follower.member_id, 1)
    leader_sync = h.sync(leader.member_id, 1, assignments={leader.member_id: b"a"})
    h.apply(h.coordinator.unload_partition(h.coordinator.partition_for("g"), h.now))
    assert h.answer(follower_sync).error is h.answer(leader_sync).error is ErrorCode.NOT_COORDINATOR
    h.complete_appends()  # the write was still in flight: it changes nothing now
    assert len(h.responses[leader_sync]) == 1


def test_loading_a_loaded_partition_again_starts_over_from_its_records() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    parked = h.join(member_id=leader, client_id="c0")
    partition = h.coordinator.partition_for("g")
    h.apply(h.coordinator.load_partition(partition, list(h.log[partition]), h.now))
    assert h.answer(parked).error is ErrorCode.NOT_COORDINATOR
    group = h.coordinator.group("g")
    assert (group.state, group.generation_id, list(group.members)) == (GroupState.STABLE, generation, ids)
    h.advance(60_000)  # the old group's timers are gone with it; the new group's sessions run out
    assert h.coordinator.group("g").state is GroupState.EMPTY
