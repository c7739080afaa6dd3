"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiration."""

from __future__ import annotations

from gregor.coordinator import GroupCoordinatorConfig, GroupState
from gregor.coordinator.offset_metadata import OffsetAndMetadata
from gregor.coordinator.offsets_records import decode_key, decode_offset_commit_value
from gregor.coordinator.results import PartitionOffset
from gregor.protocol.error_codes import ErrorCode

from .harness import Harness, subscription

NONE = ErrorCode.NONE
NO_OFFSET = PartitionOffset(-1, -1, "", NONE)


def offset_records(h: Harness, group: str = "g") -> list[tuple[tuple[str, int], OffsetAndMetadata | None]]:
    """The offset commit records of `group` in its partition's log, decoded."""
    records = []
    for key, value in h.log[h.coordinator.partition_for(group)]:
        decoded = decode_key(key)
        if hasattr(decoded, "topic") and decoded.group == group:
            records.append(((decoded.topic, decoded.partition),
                            None if value is None else decode_offset_commit_value(value)))
    return records


def test_members_commit_and_fetch() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    result = h.commit_now({("t", 0): (10, 3, "m"), ("t", 1): (20, -1, None)}, generation=generation,
                          member_id=ids[1])
    assert result.errors == {("t", 0): NONE, ("t", 1): NONE}
    fetched = h.fetch(partitions=[("t", 0), ("t", 1), ("t", 2)])
    assert fetched.error is NONE
    assert fetched.partitions == {("t", 0): (10, 3, "m", NONE), ("t", 1): (20, -1, "", NONE), ("t", 2): NO_OFFSET}
    assert set(h.fetch(partitions=None).partitions) == {("t", 0), ("t", 1)}
    assert offset_records(h) == [(("t", 0), OffsetAndMetadata(10, 3, "m", h.now)),
                                 (("t", 1), OffsetAndMetadata(20, -1, "", h.now))]


def test_commit_errors_of_group_members() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    offsets = {("t", 0): (1, -1, "")}
    assert h.commit_now(offsets, generation=generation + 1, member_id=ids[1]).errors[("t", 0)] is \
        ErrorCode.ILLEGAL_GENERATION
    assert h.commit_now(offsets, generation=generation, member_id="nobody").errors[("t", 0)] is \
        ErrorCode.UNKNOWN_MEMBER_ID
    # Only members may commit to a group with members.
    assert h.commit_now(offsets).errors[("t", 0)] is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.commit_now(offsets, generation=generation, member_id=ids[1], instance="i").errors[("t", 0)] is \
        ErrorCode.UNKNOWN_MEMBER_ID
    assert h.commit_now(offsets, group="").errors[("t", 0)] is NONE  # the empty group id is allowed
    assert h.fetch(partitions=None).partitions == {}


def test_commit_while_completing_rebalance_is_refused() -> None:
    h = Harness()
    tokens = [h.join(require_known=False, client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: h.answered(tokens[0]))
    member = h.answer(tokens[1])
    result = h.commit_now({("t", 0): (1, -1, "")}, generation=member.generation_id, member_id=member.member_id)
    assert result.errors == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}


def test_commit_while_preparing_rebalance_is_allowed_and_keeps_the_member_alive() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2)
    h.join(member_id=leader, client_id="c0")
    for _ in range(5):
        h.advance(5000)
        result = h.commit_now({("t", 0): (1, -1, "")}, generation=generation, member_id=ids[1])
        assert result.errors == {("t", 0): NONE}
    assert ids[1] in h.coordinator.group("g").members


def test_simple_commits_create_an_empty_group_without_protocol() -> None:
    h = Harness()
    assert h.commit_now({("t", 0): (5, -1, "")}, group="simple").errors == {("t", 0): NONE}
    group = h.coordinator.group("simple")
    assert (group.state, group.protocol_type, group.generation_id) == (GroupState.EMPTY, None, 0)
    assert h.fetch(group="simple", partitions=[("t", 0)]).partitions[("t", 0)].offset == 5
    # A generation only members of a live group can have is refused for a group that does not exist.
    assert h.commit_now({("t", 0): (5, -1, "")}, group="other", generation=3, member_id="m").errors == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert h.coordinator.group("other") is None


def test_metadata_too_large() -> None:
    h = Harness()
    limit = h.config.offset_metadata_max_bytes
    result = h.commit_now({("t", 0): (1, -1, "x" * limit), ("t", 1): (1, -1, "x" * (limit + 1))}, group="s")
    assert result.errors == {("t", 0): NONE, ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert set(h.fetch(group="s", partitions=None).partitions) == {("t", 0)}
    # The limit counts UTF-16 code units, as Java's String.length().
    emoji = "\U0001F600"
    result = h.commit_now({("u", 0): (1, -1, emoji * (limit // 2)), ("u", 1): (1, -1, emoji * (limit // 2 + 1)),
                           ("u", 2): (1, -1, "é" * limit)}, group="s")
    assert result.errors == {("u", 0): NONE, ("u", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE, ("u", 2): NONE}


def test_all_metadata_too_large_writes_nothing() -> None:
    h = Harness(GroupCoordinatorConfig(offset_metadata_max_bytes=3))
    result = h.commit_now({("t", 0): (1, -1, "long"), ("t", 1): (1, -1, "long!")}, group="s")
    assert set(result.errors.values()) == {ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert offset_records(h, "s") == []


def test_commits_are_visible_once_written_and_unstable_until_then() -> None:
    h = Harness(auto_append=False)
    token = h.commit({("t", 0): (7, -1, "")})
    assert not h.answered(token)
    assert h.fetch(partitions=[("t", 0)]).partitions[("t", 0)] == NO_OFFSET
    assert h.fetch(partitions=[("t", 0)], require_stable=True).partitions[("t", 0)].error is \
        ErrorCode.UNSTABLE_OFFSET_COMMIT
    h.complete_appends()
    assert h.answer(token).errors == {("t", 0): NONE}
    assert h.fetch(partitions=[("t", 0)], require_stable=True).partitions[("t", 0)] == (7, -1, "", NONE)


def test_a_failed_write_keeps_the_old_offset_and_maps_the_error() -> None:
    h = Harness()
    h.commit_now({("t", 0): (1, -1, "")})
    h.auto_append = False
    for append_error, client_error in [(ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
                                       (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                       (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR)]:
        token = h.commit({("t", 0): (2, -1, ""), ("t", 1): (3, -1, "x" * 5000)})
        h.complete_appends(append_error)
        assert h.answer(token).errors == {("t", 0): client_error, ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}
        assert h.fetch(partitions=[("t", 0)], require_stable=True).partitions[("t", 0)].offset == 1


def test_overlapping_commits_end_with_the_last_one() -> None:
    h = Harness(auto_append=False)
    first, second = h.commit({("t", 0): (1, -1, "")}), h.commit({("t", 0): (2, -1, "")})
    h.complete_appends()
    assert h.answer(first).errors == h.answer(second).errors == {("t", 0): NONE}
    assert h.fetch(partitions=[("t", 0)], require_stable=True).partitions[("t", 0)].offset == 2


def test_a_retention_time_writes_an_expiring_value() -> None:
    h = Harness()
    h.commit_now({("t", 0): (1, 4, "")}, retention=60_000)
    h.commit_now({("t", 1): (1, 4, "")})
    assert offset_records(h) == [(("t", 0), OffsetAndMetadata(1, -1, "", h.now, h.now + 60_000)),
                                 (("t", 1), OffsetAndMetadata(1, 4, "", h.now))]


def test_fetch_for_unknown_groups_and_errors() -> None:
    h = Harness()
    assert h.fetch(group="nope", partitions=[("t", 0)]).partitions == {("t", 0): NO_OFFSET}
    assert h.fetch(group="nope", partitions=None).partitions == {}
    assert Harness(load=False).fetch().error is ErrorCode.NOT_COORDINATOR


def test_delete_offsets_of_an_empty_group() -> None:
    h = Harness()
    h.commit_now({("t", 0): (1, -1, ""), ("t", 1): (2, -1, "")})
    result, effects = h.coordinator.delete_offsets(group_id="g", partitions=[("t", 0), ("x", 9)], now_ms=h.now)
    h.apply(effects)
    assert (result.error, result.partitions) == (NONE, {("t", 0): NONE, ("x", 9): NONE})
    assert h.fetch(partitions=None).partitions == {("t", 1): (2, -1, "", NONE)}
    assert offset_records(h)[-1] == (("t", 0), None)
    assert all(effect.append_id is None for effect in effects)


def test_delete_the_last_offsets_of_an_empty_group_drops_it() -> None:
    h = Harness()
    h.commit_now({("t", 0): (1, -1, "")})
    h.apply(h.coordinator.delete_offsets(group_id="g", partitions=[("t", 0)], now_ms=h.now)[1])
    assert h.coordinator.group("g") is None


def test_delete_offsets_a_consumer_group_still_subscribes_to() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(2, protocols=[("range", subscription("orders"))])
    h.commit_now({("orders", 0): (1, -1, ""), ("old", 0): (1, -1, "")}, generation=generation, member_id=leader)
    result, effects = h.coordinator.delete_offsets(group_id="g", partitions=[("orders", 0), ("old", 0)],
                                                   now_ms=h.now)
    h.apply(effects)
    assert (result.error, result.partitions) == (NONE, {("orders", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
                                                        ("old", 0): NONE})
    assert set(h.fetch(partitions=None).partitions) == {("orders", 0)}


def test_unreadable_subscriptions_protect_every_topic() -> None:
    h = Harness()
    h.form_group(1, protocols=[("range", b"\x00")])
    result, _ = h.coordinator.delete_offsets(group_id="g", partitions=[("any", 0)], now_ms=h.now)
    assert result.partitions == {("any", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC}


def test_delete_offsets_errors() -> None:
    h = Harness()
    h.form_group(1, protocol_type="connect")
    assert h.coordinator.delete_offsets(group_id="g", partitions=[("t", 0)], now_ms=h.now)[0].error is \
        ErrorCode.NON_EMPTY_GROUP
    assert h.coordinator.delete_offsets(group_id="missing", partitions=[], now_ms=h.now)[0].error is \
        ErrorCode.GROUP_ID_NOT_FOUND
    assert h.coordinator.delete_offsets(group_id="", partitions=[], now_ms=h.now)[0].error is \
        ErrorCode.INVALID_GROUP_ID


# -- expiration (retention 1 minute, checked every second)

MINUTE = 60_000


def expiring_harness() -> Harness:
    return Harness(GroupCoordinatorConfig(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000))


def test_simple_group_offsets_expire_a_retention_after_their_commit() -> None:
    h = expiring_harness()
    h.commit_now({("t", 0): (1, -1, "")}, group="s")
    h.advance(MINUTE // 2)
    h.commit_now({("t", 1): (1, -1, "")}, group="s")
    h.advance(MINUTE // 2)
    assert set(h.fetch(group="s", partitions=None).partitions) == {("t", 1)}
    assert offset_records(h, "s")[-1] == (("t", 0), None)
    h.advance(MINUTE // 2)
    assert h.coordinator.group("s") is None
    # Only offset tombstones: a group without generations never wrote a group record.
    assert offset_records(h, "s")[-1] == (("t", 1), None)
    assert len(h.log[h.coordinator.partition_for("s")]) == 4


def test_an_explicit_retention_time_wins() -> None:
    h = expiring_harness()
    h.commit_now({("t", 0): (1, -1, "")}, group="s", retention=5000)
    h.advance(5000)
    assert h.fetch(group="s", partitions=None).partitions == {}


def test_offsets_of_an_empty_group_expire_a_retention_after_it_emptied() -> None:
    h = expiring_harness()
    ids, generation, leader = h.form_group(1)
    h.commit_now({("t", 0): (1, -1, "")}, generation=generation, member_id=leader)
    h.keep_alive([leader], generation, 2 * MINUTE)
    h.leave(leader)
    assert h.coordinator.group("g").state is GroupState.EMPTY
    h.advance(MINUTE - 1000)
    assert h.fetch(partitions=None).partitions
    h.advance(1000)
    assert h.coordinator.group("g") is None
    partition_log = h.log[h.coordinator.partition_for("g")]
    assert partition_log[-1][1] is None and decode_key(partition_log[-1][0]).group == "g"  # group tombstone


def test_a_stable_consumer_group_keeps_offsets_of_subscribed_topics_only() -> None:
    h = expiring_harness()
    ids, generation, leader = h.form_group(1, protocols=[("range", subscription("orders"))])
    h.commit_now({("orders", 0): (1, -1, ""), ("old", 0): (1, -1, "")}, generation=generation, member_id=leader)
    h.keep_alive([leader], generation, 2 * MINUTE)
    assert set(h.fetch(partitions=None).partitions) == {("orders", 0)}


def test_a_rebalancing_group_keeps_all_offsets() -> None:
    h = expiring_harness()
    ids, generation, leader = h.form_group(2, protocols=[("range", subscription("orders"))])
    h.commit_now({("old", 0): (1, -1, "")}, generation=generation, member_id=leader)
    h.join(member_id=leader, client_id="c0", protocols=[("range", subscription("orders"))], rebalance=300_000)
    h.keep_alive(ids, generation, 2 * MINUTE)
    assert h.coordinator.group("g").state is GroupState.PREPARING_REBALANCE
    assert set(h.fetch(partitions=None).partitions) == {("old", 0)}


def test_offsets_being_written_do_not_expire() -> None:
    h = expiring_harness()
    h.commit_now({("t", 0): (1, -1, "")}, group="s")
    h.auto_append = False
    h.advance(MINUTE - 1)
    h.commit({("t", 0): (2, -1, "")}, group="s")
    h.advance(MINUTE)
    assert h.fetch(group="s", partitions=[("t", 0)]).partitions[("t", 0)].offset == 1
    h.complete_appends()
    assert h.fetch(group="s", partitions=[("t", 0)]).partitions[("t", 0)].offset == 2


def test_groups_that_never_got_going_are_swept() -> None:
    h = expiring_harness()
    assert h.join_now(protocols=[]).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.coordinator.group("g") is not None
    h.advance(1000)
    assert h.coordinator.group("g") is None


def test_offsets_of_deleted_partitions_are_dropped_from_every_group() -> None:
    h = Harness()
    ids, generation, leader = h.form_group(1, protocols=[("range", subscription("gone"))])
    h.commit_now({("gone", 0): (1, -1, ""), ("kept", 0): (1, -1, "")}, generation=generation, member_id=leader)
    h.commit_now({("gone", 0): (1, -1, ""), ("gone", 1): (1, -1, "")}, group="simple")
    h.apply(h.coordinator.on_partitions_deleted([("gone", 0), ("gone", 1)], h.now))
    assert set(h.fetch(partitions=None).partitions) == {("kept", 0)}
    assert h.coordinator.group("simple") is None
    assert offset_records(h, "simple")[-2:] == [(("gone", 0), None), (("gone", 1), None)]
