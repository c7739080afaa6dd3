"""A consumer asks for its group coordinator again while brokers answer COORDINATOR_NOT_AVAILABLE
(a new replicated cluster still creating __consumer_offsets), and gives up at its deadline or on
an error that retrying cannot fix."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from gregor.client.consumer.coordinator import GroupMembership
from gregor.client.errors import KafkaException
from gregor.protocol.error_codes import ErrorCode


class ScriptedCoordinators:
    def __init__(self, *answers: int | ErrorCode) -> None:
        self.answers = list(answers)
        self.asked = 0

    async def find(self, key: str, timeout_ms: float | None = None) -> int:
        self.asked += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, ErrorCode):
            raise KafkaException(answer, "scripted")
        return answer


def membership(coordinators: ScriptedCoordinators) -> GroupMembership:
    network = SimpleNamespace(settings=SimpleNamespace(retry_backoff_ms=1))
    member = GroupMembership(network, "g", None, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                             heartbeat_interval_ms=3000)
    member.coordinators = coordinators
    return member


def test_coordinator_not_available_is_asked_again_until_a_coordinator_is_named():
    coordinators = ScriptedCoordinators(ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE, 2)
    assert asyncio.run(membership(coordinators).coordinator(time.monotonic() + 5)) == 2
    assert coordinators.asked == 3


def test_the_deadline_and_errors_retrying_cannot_fix_end_the_lookup():
    late = ScriptedCoordinators(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    with pytest.raises(KafkaException) as raised:
        asyncio.run(membership(late).coordinator(time.monotonic() + 0.05))
    assert raised.value.code == ErrorCode.COORDINATOR_NOT_AVAILABLE and late.asked > 1
    refused = ScriptedCoordinators(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        asyncio.run(membership(refused).coordinator(time.monotonic() + 5))
    assert refused.asked == 1
