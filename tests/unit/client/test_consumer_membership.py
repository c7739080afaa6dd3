"""The KIP-848 member state machine (`ConsumerMembership`), fed heartbeat answers and the time."""

from __future__ import annotations

import uuid

import pytest

from gregor.client.consumer.consumer_membership import ConsumerMembership, MemberState
from gregor.client.network import TopicPartition
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ConsumerGroupHeartbeatResponse

T1, T2 = uuid.uuid4(), uuid.uuid4()
NAMES = {T1: "t1", T2: "t2"}


def answer(epoch: int, assignment: dict | None = None, error: ErrorCode = ErrorCode.NONE,
           interval: int = 500) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(
        error_code=error, member_epoch=epoch, heartbeat_interval_ms=interval,
        assignment=None if assignment is None else ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[
            ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=topic, partitions=partitions)
            for topic, partitions in assignment.items()]))


def member(instance_id: str | None = None) -> ConsumerMembership:
    return ConsumerMembership("g", instance_id=instance_id, rack_id=None, rebalance_timeout_ms=300_000,
                              server_assignor="uniform", retry_backoff_ms=100)


def joined(m: ConsumerMembership, assignment: dict) -> None:
    m.subscribe(("t1", "t2"), None, 0.0)
    m.heartbeat(0.0)
    m.on_response(answer(1, assignment), 0.0)


def test_join_sends_a_full_request_with_a_client_generated_member_id():
    m = member()
    assert not m.heartbeat_due(0.0)  # not subscribed
    m.subscribe(("t2", "t1"), None, 0.0)
    assert m.state is MemberState.JOINING and m.heartbeat_due(0.0)
    request = m.heartbeat(0.0)
    assert uuid.UUID(request.member_id) and request.member_epoch == 0
    assert request.subscribed_topic_names == ["t1", "t2"] and request.server_assignor == "uniform"
    assert request.rebalance_timeout_ms == 300_000 and request.topic_partitions == []
    assert not m.heartbeat_due(0.0), "one heartbeat in flight at a time"


def test_reconcile_revoke_then_assign_then_acknowledge_then_stable():
    m = member()
    joined(m, {T1: [0, 1]})
    assert m.state is MemberState.RECONCILING and m.member_epoch == 1 and m.heartbeat_interval == 0.5
    step = m.reconciliation(NAMES)
    assert step.assigned == {TopicPartition("t1", 0), TopicPartition("t1", 1)} and not step.revoked
    assert m.reconciliation(NAMES) is None, "one step at a time"
    m.reconciled(step, 1.0)
    assert m.state is MemberState.ACKNOWLEDGING and m.heartbeat_due(1.0)
    ack = m.heartbeat(1.0)
    assert [(tp.topic_id, tp.partitions) for tp in ack.topic_partitions] == [(T1, [0, 1])]
    assert ack.subscribed_topic_names is None and ack.server_assignor is None and ack.rebalance_timeout_ms == -1
    m.on_response(answer(1), 1.0)
    assert m.state is MemberState.STABLE and not m.heartbeat_due(1.4) and m.heartbeat_due(1.5)
    assert m.heartbeat(1.5).topic_partitions is None, "unchanged ownership goes as null"
    m.on_response(answer(2, {T1: [1], T2: [0]}), 2.0)
    step = m.reconciliation(NAMES)
    assert step.revoked == {TopicPartition("t1", 0)} and step.assigned == {TopicPartition("t2", 0)}
    assert step.epoch == 2


def test_an_empty_first_assignment_is_still_a_step_later_equal_targets_are_not():
    m = member()
    joined(m, {})
    step = m.reconciliation(NAMES)
    assert step is not None and not step.assigned and not step.revoked, "on_partitions_assigned([]) after a join"
    m.reconciled(step, 0.0)
    m.heartbeat(0.0)
    m.on_response(answer(2, {}), 0.0)
    assert m.reconciliation(NAMES) is None and m.state is MemberState.STABLE


def test_unknown_topic_ids_wait_for_metadata():
    m = member()
    joined(m, {T1: [0], T2: [0]})
    step = m.reconciliation({T1: "t1"})
    assert m.unresolved == {T2} and step.target == {TopicPartition("t1", 0)}
    m.reconciled(step, 0.0)
    assert m.state is MemberState.RECONCILING
    step = m.reconciliation(NAMES)
    assert step.assigned == {TopicPartition("t2", 0)}


def test_a_new_target_during_a_step_is_reconciled_next():
    m = member()
    joined(m, {T1: [0]})
    step = m.reconciliation(NAMES)
    m.heartbeat(0.1)
    m.on_response(answer(2, {T1: [0, 1]}), 0.1)
    m.reconciled(step, 0.2)
    assert m.state is MemberState.RECONCILING
    assert m.reconciliation(NAMES).assigned == {TopicPartition("t1", 1)}


@pytest.mark.parametrize("error", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_member_rejoins_with_epoch_zero_and_the_same_id(error):
    m = member()
    joined(m, {T1: [0]})
    m.reconciled(m.reconciliation(NAMES), 0.0)
    member_id = m.member_id
    m.heartbeat(0.0)
    m.on_response(answer(0, error=error), 0.0)
    assert m.fenced and not m.heartbeat_due(10.0), "waits for the application to report the loss"
    m.rejoin(1.0)
    request = m.heartbeat(1.0)
    assert (request.member_id, request.member_epoch, request.topic_partitions) == (member_id, 0, [])
    assert not m.owned and request.subscribed_topic_names == ["t1", "t2"]


@pytest.mark.parametrize(("instance_id", "epoch"), [(None, -1), ("static-1", -2)])
def test_leave_sends_the_leave_epoch(instance_id, epoch):
    m = member(instance_id)
    joined(m, {T1: [0]})
    assert m.leave(0.0) and m.state is MemberState.LEAVING
    request = m.heartbeat(0.0)
    assert request.member_epoch == epoch and request.instance_id == instance_id
    m.on_response(answer(epoch), 0.0)
    assert m.state is MemberState.UNSUBSCRIBED and not m.heartbeat_due(10.0)


def test_a_member_never_answered_leaves_without_a_request():
    m = member()
    m.subscribe(("t1",), None, 0.0)
    assert not m.leave(0.0) and m.state is MemberState.UNSUBSCRIBED


def test_retriable_errors_back_off_and_send_a_full_request_fatal_ones_stop():
    m = member()
    joined(m, {T1: [0]})
    m.reconciled(m.reconciliation(NAMES), 0.0)
    m.heartbeat(0.0)
    m.on_response(answer(1), 0.0)
    m.heartbeat(1.0)
    m.on_response(answer(0, error=ErrorCode.NOT_COORDINATOR), 1.0)
    assert not m.heartbeat_due(1.05) and m.heartbeat_due(1.1)
    full = m.heartbeat(1.1)
    assert full.subscribed_topic_names == ["t1", "t2"] and full.topic_partitions is not None
    m.on_response(answer(0, error=ErrorCode.GROUP_AUTHORIZATION_FAILED), 1.2)
    assert m.state is MemberState.FATAL and m.fatal.name == "GROUP_AUTHORIZATION_FAILED"


def test_regex_subscription_goes_as_the_regex():
    m = member()
    m.subscribe(None, "^rx-.*", 0.0)
    request = m.heartbeat(0.0)
    assert request.subscribed_topic_regex == "^rx-.*" and request.subscribed_topic_names is None
