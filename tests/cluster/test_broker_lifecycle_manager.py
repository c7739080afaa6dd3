"""Gregor's broker-side lifecycle (registration, heartbeats, controlled shutdown) through the
controller channel, against three real controller processes: it finds the active controller,
keeps its registration through the loss of that controller, and leaves only when allowed."""

from __future__ import annotations

import asyncio

import pytest

from gregor.broker.broker_lifecycle import BrokerLifecycle, LifecycleState
from gregor.broker.peer_channel import PLAINTEXT
from gregor.broker.controller_channel import ControllerChannel
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.broker_registration import BrokerRegistrationRequest

from tests.cluster.quorum import CLUSTER_ID, SESSION_MS, create_topic, leader_view

pytestmark = pytest.mark.slow


def lifecycle_for(nodes, broker_id: int, cluster_id: str = CLUSTER_ID) -> BrokerLifecycle:
    voters = {i: ("127.0.0.1", node.port) for i, node in enumerate(nodes, 1)}
    listener = BrokerRegistrationRequest.Listener(name="PLAINTEXT", host="127.0.0.1", port=9000 + broker_id,
                                                  security_protocol=0)
    return BrokerLifecycle(ControllerChannel.over_sockets(voters, PLAINTEXT, f"broker-{broker_id}"), broker_id,
                           cluster_id, [listener],
                           None, lambda: 1 << 40, heartbeat_interval_ms=200)


def test_registration_survives_controller_failover_and_shutdown_waits_for_leadership_to_move(controllers):
    async def scenario() -> None:
        first, second = lifecycle_for(controllers, 7), lifecycle_for(controllers, 8)
        for lifecycle in (first, second):
            lifecycle.start()
        epoch = await asyncio.wait_for(first.registered(), 30)
        await asyncio.wait_for(asyncio.gather(first.unfenced(), second.unfenced()), 30)
        # short blocking calls (a quick answer, a kill), so the heartbeats barely pause
        assert create_topic(controllers, "led", 4, 2).error_code == ErrorCode.NONE
        index, _ = leader_view(controllers)
        controllers[index].kill9()
        await asyncio.sleep(SESSION_MS / 1000 * 4)  # longer than a session: only heartbeats keep it
        assert (first.state, first.broker_epoch) == (LifecycleState.RUNNING, epoch)
        assert await first.controlled_shutdown(30) is True
        assert first.state is LifecycleState.STOPPED
        for lifecycle in (first, second):
            await lifecycle.close()

    asyncio.run(scenario())


def test_a_broker_of_another_cluster_is_told_so(controllers):
    async def scenario() -> None:
        lifecycle = lifecycle_for(controllers, 9, cluster_id="some-other-cluster-id")
        lifecycle.start()
        with pytest.raises(KafkaError) as refused:
            await asyncio.wait_for(lifecycle.registered(), 30)
        assert refused.value.code == ErrorCode.INCONSISTENT_CLUSTER_ID
        await lifecycle.close()

    asyncio.run(scenario())
