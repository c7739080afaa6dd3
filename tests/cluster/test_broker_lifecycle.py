"""Brokers' lifecycle on the active controller, over the controller listener of real controller
processes: registration (fenced until caught up), heartbeats that unfence, a session that
expires and fences, controlled shutdown, topic creation across the registered brokers, ISR
changes proposed with AlterPartition, and all of it surviving the loss of the active controller.

The brokers here are scripted (raw requests from the test), so each answer can be checked.
"""

from __future__ import annotations

import time
import uuid

import pytest

from gregor.metadata.features import SUPPORTED_FEATURES
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    CreatePartitionsRequest, CreatePartitionsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
)
from gregor.protocol.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from gregor.protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from gregor.protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse

from tests.cluster.quorum import CLUSTER_ID, SESSION_MS, active, call, create_topic, to_controller, to_controller_result

pytestmark = pytest.mark.slow


def register(nodes, broker_id: int, incarnation: uuid.UUID | None = None, cluster_id: str = CLUSTER_ID):
    request = BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster_id, incarnation_id=incarnation or uuid.UUID(int=broker_id),
        listeners=[BrokerRegistrationRequest.Listener(name="PLAINTEXT", host="127.0.0.1", port=9000 + broker_id,
                                                      security_protocol=0)],
        features=[BrokerRegistrationRequest.Feature(name=f.name, min_supported_version=f.min_level,
                                                    max_supported_version=f.max_level)
                  for f in SUPPORTED_FEATURES], rack="")
    return to_controller(nodes, request, 2, BrokerRegistrationResponse)


def heartbeat(nodes, broker_id: int, epoch: int, offset: int = 1 << 40, **flags):
    request = BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=offset,
                                     **flags)
    return to_controller(nodes, request, 0, BrokerHeartbeatResponse)


def test_a_broker_is_fenced_until_caught_up_and_again_when_its_session_expires(controllers):
    registration = register(controllers, 1)
    assert registration.error_code == ErrorCode.NONE and registration.broker_epoch > 0
    behind = heartbeat(controllers, 1, registration.broker_epoch, offset=registration.broker_epoch - 1)
    assert (behind.error_code, behind.is_caught_up, behind.is_fenced) == (ErrorCode.NONE, False, True)
    assert heartbeat(controllers, 1, registration.broker_epoch).is_fenced is False
    time.sleep(SESSION_MS / 1000 * 3)
    expired = heartbeat(controllers, 1, registration.broker_epoch, offset=0)
    assert expired.is_fenced is True


def test_registration_and_heartbeat_errors_name_the_problem(controllers):
    first = register(controllers, 2)
    assert heartbeat(controllers, 2, first.broker_epoch).is_fenced is False
    assert register(controllers, 2, incarnation=uuid.uuid4()).error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    assert register(controllers, 3, cluster_id="another-cluster-id-xx").error_code == \
        ErrorCode.INCONSISTENT_CLUSTER_ID
    assert heartbeat(controllers, 2, first.broker_epoch - 1).error_code == ErrorCode.STALE_BROKER_EPOCH
    assert heartbeat(controllers, 9, 1).error_code == ErrorCode.BROKER_ID_NOT_REGISTERED
    follower = next(node.port for node in controllers if node.port != active(controllers))
    refused = call(follower, BrokerHeartbeatRequest(broker_id=2, broker_epoch=first.broker_epoch), 0,
                   BrokerHeartbeatResponse)
    assert refused.error_code == ErrorCode.NOT_CONTROLLER


def test_topics_spread_over_brokers_isr_changes_and_controller_failover(controllers):
    epochs = {}
    for broker in (1, 2, 3):
        epochs[broker] = register(controllers, broker).broker_epoch
        assert heartbeat(controllers, broker, epochs[broker]).is_fenced is False
    created = create_topic(controllers, "orders", 3, 3)
    assert created.error_code == ErrorCode.NONE, created.error_message
    assert create_topic(controllers, "too-wide", 1, 4).error_code == ErrorCode.INVALID_REPLICATION_FACTOR

    def alter(leader: int, isr: list[int], leader_epoch: int, partition_epoch: int):
        request = AlterPartitionRequest(broker_id=leader, broker_epoch=epochs[leader], topics=[
            AlterPartitionRequest.TopicData(topic_id=created.topic_id, partitions=[
                AlterPartitionRequest.PartitionData(partition_index=0, leader_epoch=leader_epoch,
                                                    partition_epoch=partition_epoch, new_isr=isr)])])
        response = to_controller(controllers, request, 2, AlterPartitionResponse)
        assert response.error_code == ErrorCode.NONE
        return response.topics[0].partitions[0]

    probe = alter(1, [1, 2, 3], 0, 0)  # learn partition 0's leader and epochs from the refusal or answer
    if probe.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        leader = next(b for b in (2, 3) if alter(b, [1, 2, 3], 0, 0).error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER)
    else:
        leader = 1
    others = [b for b in (1, 2, 3) if b != leader]
    shrunk = alter(leader, [leader, others[0]], 0, 0)
    assert shrunk.error_code == ErrorCode.NONE
    assert (sorted(shrunk.isr), shrunk.leader_id, shrunk.partition_epoch) == (sorted([leader, others[0]]), leader, 1)
    assert alter(leader, [leader], 0, 0).error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert alter(leader, [leader], 7, 1).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert alter(others[0], [others[0]], 0, 1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    old_leader = next(i for i, node in enumerate(controllers) if node.port == active(controllers))
    controllers[old_leader].kill9()
    for broker in (1, 2, 3):  # the registrations survived; the new controller keeps the sessions
        assert heartbeat(controllers, broker, epochs[broker]).error_code == ErrorCode.NONE
    assert active(controllers) != controllers[old_leader].port
    assert alter(leader, [leader, *others], 0, 1).partition_epoch == 2


def test_controlled_shutdown_moves_leadership_before_the_broker_may_stop(controllers):
    epochs = {broker: register(controllers, broker).broker_epoch for broker in (1, 2)}
    for broker, epoch in epochs.items():
        assert heartbeat(controllers, broker, epoch).is_fenced is False
    assert create_topic(controllers, "logs", 4, 2).error_code == ErrorCode.NONE
    first = heartbeat(controllers, 1, epochs[1], want_shut_down=True)
    assert first.error_code == ErrorCode.NONE and first.should_shut_down is False
    second = heartbeat(controllers, 1, epochs[1], want_shut_down=True)
    assert second.should_shut_down is True and second.is_fenced is True


def test_topic_and_config_changes_are_decided_by_the_active_controller(controllers):
    for broker in (1, 2):
        epoch = register(controllers, broker).broker_epoch
        assert heartbeat(controllers, broker, epoch).is_fenced is False
    assert create_topic(controllers, "events", 2, 2).error_code == ErrorCode.NONE
    grow = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name="events", count=4, assignments=None)], timeout_ms=5000)
    assert to_controller_result(controllers, grow, 3, CreatePartitionsResponse).results[0].error_code == ErrorCode.NONE
    alter = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=2, resource_name="events", configs=[IncrementalAlterConfigsRequest.AlterableConfig(
            name="retention.ms", config_operation=0, value="60000")])])
    altered = to_controller_result(controllers, alter, 1, IncrementalAlterConfigsResponse).responses[0]
    assert altered.error_code == ErrorCode.NONE
    delete = DeleteTopicsRequest(topic_names=["events", "missing"], timeout_ms=5000)
    deleted = to_controller_result(controllers, delete, 5, DeleteTopicsResponse).responses
    assert [(r.name, r.error_code) for r in deleted] == [("events", ErrorCode.NONE),
                                                        ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
