"""ConsumerGroupHeartbeat: epochs, reconciliation, fencing, static members, timeouts, errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.coordinator import GroupCoordinatorConfig
from gregor.coordinator.consumer.heartbeat import HeartbeatRequest
from gregor.coordinator.consumer.member import MemberState
from gregor.protocol.error_codes import ErrorCode
from tests.unit.coordinator.consumer_harness import T1, T2, ConsumerHarness


@pytest.fixture
def h() -> ConsumerHarness:
    harness = ConsumerHarness()
    harness.set_topics(t1=6, t2=2)
    return harness


def parts(*partitions: int, topic=T1):
    return {topic: frozenset(partitions)}


def test_a_partition_moves_only_once_its_owner_revoked_it(h):
    a = h.cg("a", 0)
    assert (a.error, a.member_epoch, a.assignment) == (ErrorCode.NONE, 1, parts(0, 1, 2, 3, 4, 5))
    b = h.cg("b", 0)
    assert (b.member_epoch, b.assignment) == (2, {}), "b's partitions are still a's"
    a = h.cg("a", 1, owned=parts(0, 1, 2, 3, 4, 5))
    assert (a.member_epoch, a.assignment) == (1, parts(0, 1, 2)), "a keeps its epoch until it revoked"
    assert h.coordinator.consumer_groups["g"].members["a"].state is MemberState.UNREVOKED_PARTITIONS
    b = h.cg("b", 2, owned={})
    assert b.assignment is None and b.member_epoch == 2
    a = h.cg("a", 1, owned=parts(0, 1, 2))
    assert (a.member_epoch, a.assignment) == (2, None)
    b = h.cg("b", 2, owned={})
    assert b.assignment == parts(3, 4, 5)
    assert h.coordinator.consumer_groups["g"].state.value == "Stable"
    written = sum(map(len, h.log.values()))
    assert h.cg("a", 2, owned=parts(0, 1, 2)).assignment is None
    assert sum(map(len, h.log.values())) == written, "a steady heartbeat writes nothing"


def test_epochs_ahead_or_behind_are_fenced_except_one_lost_answer(h):
    h.cg("a", 0)
    h.cg("b", 0)
    h.cg("a", 1, owned=parts(0, 1, 2, 3, 4, 5))
    h.cg("a", 1, owned=parts(0, 1, 2))
    assert h.cg("a", 3, owned=parts(0, 1, 2)).error is ErrorCode.FENCED_MEMBER_EPOCH
    # Epoch 1 is the one before: a lost answer, accepted while it owns only what it was given.
    assert h.cg("a", 1, owned=parts(0, 1, 2)).error is ErrorCode.NONE
    assert h.cg("a", 1, owned=parts(0, 1, 2, 3)).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert h.cg("a", 1).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert h.cg("nobody", 1).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.cg("x", 1, group="no-such-group").error is ErrorCode.GROUP_ID_NOT_FOUND


JOIN = dict(rebalance_timeout_ms=1000, subscribed_topic_names=("t1",), owned={})


@pytest.mark.parametrize("request_, message", [
    (HeartbeatRequest("", "a", 0, **JOIN), "GroupId can't be empty."),
    (HeartbeatRequest("g", "", 1), "MemberId can't be empty."),
    (HeartbeatRequest("g", "", 0, version=1, **JOIN), "MemberId can't be empty."),
    (HeartbeatRequest("g", "a", 0, subscribed_topic_names=("t1",), owned={}),
     "RebalanceTimeoutMs must be provided in first request."),
    (HeartbeatRequest("g", "a", 0, rebalance_timeout_ms=1000, owned={}),
     "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."),
    (HeartbeatRequest("g", "a", 0, rebalance_timeout_ms=1000, subscribed_topic_names=("t1",), owned={T1: frozenset({1})}),
     "TopicPartitions must be empty when (re-)joining."),
    (HeartbeatRequest("g", "a", -3), "MemberEpoch -3 is invalid."),
    (HeartbeatRequest("g", "a", -2), "InstanceId can't be null."),
    (HeartbeatRequest("g", "a", 0, instance_id="", **JOIN), "InstanceId can't be empty."),
    (HeartbeatRequest("g", "a", 0, rack_id="", **JOIN), "RackId can't be empty."),
])
def test_malformed_heartbeats_are_invalid_requests(h, request_, message):
    token = h.token()
    h.apply(h.coordinator.consumer_group_heartbeat(token, request_, h.now))
    result = h.answer(token)
    assert (result.error, result.error_message) == (ErrorCode.INVALID_REQUEST, message)


def test_a_v0_member_without_an_id_gets_one(h):
    token = h.token()
    h.apply(h.coordinator.consumer_group_heartbeat(token, HeartbeatRequest("g", "", 0, version=0, **JOIN), h.now))
    result = h.answer(token)
    assert result.error is ErrorCode.NONE and len(result.member_id) == 22
    assert list(h.coordinator.consumer_groups["g"].members) == [result.member_id]


def test_unknown_assignor_bad_regex_and_full_group_are_refused(h):
    assert h.cg("a", 0, assignor="sticky").error is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert h.cg("a", 0, topics=None, regex="t(").error is ErrorCode.INVALID_REGULAR_EXPRESSION
    small = ConsumerHarness(h.config.__class__(group_consumer_max_size=1))
    small.set_topics(t1=1)
    assert small.cg("a", 0).error is ErrorCode.NONE
    assert small.cg("b", 0).error is ErrorCode.GROUP_MAX_SIZE_REACHED


def test_a_regex_subscription_follows_new_topics_and_partitions(h):
    a = h.cg("a", 0, topics=None, regex="t.*")
    assert a.assignment == {T1: frozenset(range(6)), T2: frozenset({0, 1})}
    h.set_topics(t1=6, t2=4)
    a = h.cg("a", 1, owned=a.assignment)
    assert (a.member_epoch, a.assignment) == (2, {T1: frozenset(range(6)), T2: frozenset(range(4))})


def test_the_range_assignor_is_chosen_by_the_members(h):
    h.cg("a", 0, assignor="range")
    b = h.cg("b", 0, assignor="range")
    group = h.coordinator.consumer_groups["g"]
    assert group.target == {"a": parts(0, 1, 2), "b": parts(3, 4, 5)}
    assert b.assignment == {}


def test_leaving_frees_the_partitions_at_once(h):
    h.cg("a", 0)
    h.cg("b", 0)
    h.cg("a", 1, owned=parts(0, 1, 2, 3, 4, 5))
    h.cg("a", 1, owned=parts(0, 1, 2))
    left = h.cg("b", -1)
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -1)
    a = h.cg("a", 2, owned=parts(0, 1, 2))
    assert (a.member_epoch, a.assignment) == (3, parts(0, 1, 2, 3, 4, 5))


def test_a_member_whose_session_expires_is_removed(h):
    h.cg("a", 0)
    h.cg("b", 0)
    h.advance(h.config.group_consumer_session_timeout_ms - 1)
    h.cg("a", 1, owned=parts(0, 1, 2, 3, 4, 5))
    h.advance(1)
    group = h.coordinator.consumer_groups["g"]
    assert list(group.members) == ["a"]
    assert h.cg("b", 2).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_removed(h):
    h.cg("a", 0, rebalance=5_000)
    h.cg("b", 0)
    h.cg("a", 1, owned=parts(0, 1, 2, 3, 4, 5))
    h.advance(4_000)
    h.cg("a", 1, owned=parts(0, 1, 2, 3, 4, 5))
    h.cg("b", 2, owned={})
    h.advance(1_000)
    assert list(h.coordinator.consumer_groups["g"].members) == ["b"]
    b = h.cg("b", 2, owned={})
    assert (b.member_epoch, b.assignment) == (3, parts(0, 1, 2, 3, 4, 5))


def test_a_static_member_returns_to_its_partitions_without_a_new_epoch(h):
    h.cg("a", 0, instance="i-a")
    h.cg("b", 0, instance="i-b")
    h.cg("a", 1, instance="i-a", owned=parts(0, 1, 2, 3, 4, 5))
    h.cg("a", 1, instance="i-a", owned=parts(0, 1, 2))
    h.cg("b", 2, instance="i-b", owned={})
    group = h.coordinator.consumer_groups["g"]
    epoch = group.group_epoch
    assert h.cg("a", -2, instance="i-a").member_epoch == -2
    assert h.cg("a2", 0, instance="i-b").error is ErrorCode.UNRELEASED_INSTANCE_ID
    back = h.cg("a2", 0, instance="i-a")
    assert (back.error, back.assignment) == (ErrorCode.NONE, parts(0, 1, 2))
    assert group.group_epoch == epoch and "a" not in group.members
    assert h.cg("a", 2, instance="i-a").error is ErrorCode.FENCED_INSTANCE_ID


def test_consumer_groups_come_back_from_their_records(h):
    h.cg("a", 0)
    h.cg("b", 0)
    h.cg("a", 1, owned=parts(0, 1, 2, 3, 4, 5))
    before = h.coordinator.consumer_groups["g"]
    partition = h.coordinator.partition_for("g")
    reloaded = ConsumerHarness(load=False)
    reloaded.set_topics(t1=6, t2=2)
    for index in range(reloaded.config.offsets_topic_num_partitions):
        reloaded.apply(reloaded.coordinator.load_partition(index, h.log.get(index, []), reloaded.now))
    after = reloaded.coordinator.consumer_groups["g"]
    assert (after.group_epoch, after.assignment_epoch, after.target) == (
        before.group_epoch, before.assignment_epoch, before.target)
    assert after.members == before.members and after.subscription_metadata == before.subscription_metadata
    assert partition == reloaded.coordinator.partition_for("g")
    # The members carry on where they were, against the new coordinator.
    assert reloaded.cg("a", 1, owned=parts(0, 1, 2)).member_epoch == 2
    assert reloaded.cg("b", 2, owned={}).assignment == parts(3, 4, 5)


def test_offset_commits_and_fetches_check_the_member_epoch(h):
    h.cg("a", 0)

    def commit(member_id, epoch, version=9):
        token = h.token()
        h.apply(h.coordinator.commit_offsets(token, group_id="g", generation_id=epoch, member_id=member_id,
                                             group_instance_id=None, retention_time_ms=-1,
                                             offsets={("t1", 0): (5, -1, "")}, now_ms=h.now, api_version=version))
        return h.answer(token).errors[("t1", 0)]

    assert commit("a", 1) is ErrorCode.NONE
    assert commit("a", 0) is ErrorCode.STALE_MEMBER_EPOCH
    assert commit("a", 2) is ErrorCode.FENCED_MEMBER_EPOCH
    assert commit("z", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("a", 1, version=8) is ErrorCode.UNSUPPORTED_VERSION
    assert commit("", -1) is ErrorCode.UNKNOWN_MEMBER_ID, "only members commit to a group with members"
    fetch = h.coordinator.fetch_offsets
    assert fetch(group_id="g", partitions=None, require_stable=False, now_ms=h.now).partitions[("t1", 0)].offset == 5
    assert fetch(group_id="g", partitions=None, require_stable=False, now_ms=h.now, member_id="a",
                 member_epoch=0).error is ErrorCode.STALE_MEMBER_EPOCH
    h.cg("a", -1)
    assert commit("", -1) is ErrorCode.NONE, "an empty group takes commits from admin tools"


def test_group_types_keep_to_their_own_apis(h):
    h.cg("a", 0)
    # A classic member may join a consumer group, but not without a readable consumer subscription.
    assert h.join_now(group="g").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join_now(group="g", protocol_type="connect").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    (described,) = h.coordinator.describe_groups(["g"])
    assert (described.error, described.state) == (ErrorCode.NONE, "Dead"), "not a classic group (below v6)"
    listed = h.coordinator.list_groups()
    assert [(g.group_id, g.group_type, g.protocol_type) for g in listed.groups] == [("g", "consumer", "consumer")]
    assert h.coordinator.list_groups(types_filter=["classic"]).groups == ()
    assert h.coordinator.list_groups(states_filter=["empty"]).groups == ()
    assert len(h.coordinator.list_groups(states_filter=["Stable"], types_filter=["consumer"]).groups) == 1
    h.join(group="classic", require_known=False)
    assert h.cg("a", 0, group="classic").error is ErrorCode.GROUP_ID_NOT_FOUND
    (missing, classic) = h.coordinator.consumer_group_describe(["none", "classic"])
    assert (missing.error, classic.error) == (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_ID_NOT_FOUND)
    (cg,) = h.coordinator.consumer_group_describe(["g"])
    assert (cg.error, cg.group_epoch, cg.assignor_name, [m.member_epoch for m in cg.members]) == (
        ErrorCode.NONE, 1, "uniform", [1])
    errors, _ = h.coordinator.delete_groups(["g"], h.now)
    assert errors == {"g": ErrorCode.NON_EMPTY_GROUP}
    h.cg("a", -1)
    errors, _ = h.coordinator.delete_groups(["g"], h.now)
    assert errors == {"g": ErrorCode.NONE} and "g" not in h.coordinator.consumer_groups


def test_an_empty_consumer_group_goes_with_its_last_offsets(h):
    h.cg("a", 0)
    h.cg("b", 0, group="other")
    token = h.token()
    h.apply(h.coordinator.commit_offsets(token, group_id="g", generation_id=1, member_id="a", group_instance_id=None,
                                         retention_time_ms=-1, offsets={("t1", 0): (5, -1, "")}, now_ms=h.now))
    h.cg("a", -1)
    h.cg("b", -1, group="other")
    h.advance(h.config.offsets_retention_check_interval_ms)
    assert "other" not in h.coordinator.consumer_groups, "no members and no offsets"
    assert "g" in h.coordinator.consumer_groups
    h.advance(h.config.offsets_retention_ms)
    assert "g" not in h.coordinator.consumer_groups
    assert h.cg("a", 1).error is ErrorCode.GROUP_ID_NOT_FOUND


def test_regex_subscriptions_are_re2_matched_in_linear_time(h):
    h.set_topics(**{"a" * 200: 1, "t1": 1, "__consumer_offsets": 1})
    joined = h.cg("a", 0, topics=None, regex="(a+)+b|.*1")  # backtracking regexes would take ages
    assert joined.assignment == {T2: frozenset({0})}, "the full name of t1 only; never an internal topic"
    refused = h.cg("b", 0, topics=None, regex="(?=t)t1")
    assert refused.error is ErrorCode.INVALID_REGULAR_EXPRESSION and "(?=" in refused.error_message


@settings(max_examples=100, deadline=None)
@given(st.lists(st.builds(
    HeartbeatRequest, group_id=st.sampled_from(["g", "", "h"]), member_id=st.sampled_from(["", "a", "b"]),
    member_epoch=st.integers(-4, 6), instance_id=st.sampled_from([None, "", "i"]),
    rack_id=st.sampled_from([None, "", "r"]), rebalance_timeout_ms=st.sampled_from([-1, 0, 5000]),
    subscribed_topic_names=st.sampled_from([None, (), ("t1",), ("t1", "t1", "nope")]),
    subscribed_topic_regex=st.sampled_from([None, "", "t.*", "(", "\\"]),
    server_assignor=st.sampled_from([None, "range", "uniform", "x"]),
    owned=st.sampled_from([None, {}, {T1: frozenset({0, 99})}, {T2: frozenset({-1})}]),
    version=st.sampled_from([0, 1])), max_size=12))
def test_any_heartbeat_is_answered_once_and_never_raises(requests):
    h = ConsumerHarness(GroupCoordinatorConfig(offsets_topic_num_partitions=1))
    h.set_topics(t1=3, t2=1)
    for request in requests:
        token = h.token()
        h.apply(h.coordinator.consumer_group_heartbeat(token, request, h.now))
        h.answer(token)
        h.advance(10_000)


def test_offsets_of_subscribed_topics_are_not_deleted(h):
    h.cg("a", 0)
    token = h.token()
    h.apply(h.coordinator.commit_offsets(token, group_id="g", generation_id=1, member_id="a", group_instance_id=None,
                                         retention_time_ms=-1, offsets={("t1", 0): (5, -1, ""), ("t2", 0): (7, -1, "")},
                                         now_ms=h.now))
    result, _ = h.coordinator.delete_offsets(group_id="g", partitions=[("t1", 0), ("t2", 0)], now_ms=h.now)
    assert result.partitions == {("t1", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("t2", 0): ErrorCode.NONE}
    fetched = h.coordinator.fetch_offsets(group_id="g", partitions=None, require_stable=False, now_ms=h.now)
    assert {tp: o.offset for tp, o in fetched.partitions.items()} == {("t1", 0): 5}


def test_transactional_offset_commits_check_the_member_epoch(h):
    """librdkafka's send_offsets_to_transaction with group.protocol=consumer sends the member id and
    epoch in TxnOffsetCommit: checked against the consumer group, not a classic one."""
    h.cg("a", 0)

    def txn_commit(member_id, epoch, offset=5):
        token = h.token()
        h.apply(h.coordinator.commit_transactional_offsets(
            token, group_id="g", producer_id=7, producer_epoch=0, generation_id=epoch, member_id=member_id,
            group_instance_id=None, offsets={("t1", 0): (offset, -1, "")}, now_ms=h.now))
        return h.answer(token).errors[("t1", 0)]

    assert txn_commit("a", 0) is ErrorCode.ILLEGAL_GENERATION, "a stale epoch, as Kafka answers a transaction"
    assert txn_commit("a", 2) is ErrorCode.FENCED_MEMBER_EPOCH
    assert txn_commit("z", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert txn_commit("", -1) is ErrorCode.UNKNOWN_MEMBER_ID, "only members commit to a group with members"
    assert txn_commit("a", 1, offset=9) is ErrorCode.NONE
    h.apply(h.coordinator.complete_transaction(h.coordinator.partition_for("g"), 7, True, h.now))
    fetched = h.coordinator.fetch_offsets(group_id="g", partitions=None, require_stable=True, now_ms=h.now,
                                          member_id="a", member_epoch=1)
    assert (fetched.error, fetched.partitions[("t1", 0)].offset) == (ErrorCode.NONE, 9)
    assert "g" in h.coordinator.consumer_groups, "still a consumer group"
