"""The heartbeat task of a group member whose coordinator drives it by heartbeats alone (KIP-848
consumer groups, KIP-932 share groups): one loop that sends a heartbeat when the membership says
it is due and otherwise sleeps until the next one or a wake-up, and the wait for a leave's answer.
The membership state machines (sans-IO) decide; the subclasses send and read the heartbeats."""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from typing import AbstractSet, Any, Protocol

from gregor.client.consumer.coordinator import CoordinatorLink
from gregor.client.network import NetworkClient


class HeartbeatMembership(Protocol):
    """What the loop reads of a membership state machine."""

    state: Any
    in_flight: bool
    next_heartbeat: float

    def heartbeat_due(self, now: float) -> bool: ...


class HeartbeatMember(CoordinatorLink, ABC):
    """Subclasses set `membership` and `in_group` (the states with a heartbeat interval) and write
    `_heartbeat_once`; `_before_heartbeat` runs each turn of the loop."""

    membership: HeartbeatMembership
    in_group: AbstractSet[Any]

    def __init__(self, network: NetworkClient, group_id: str) -> None:
        super().__init__(network, group_id)
        self._wakeup: asyncio.Event | None = None
        self._answered: asyncio.Event | None = None

    def wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def heartbeat_loop(self) -> None:
        self._wakeup = asyncio.Event()
        self._answered = asyncio.Event()
        membership = self.membership
        try:
            while True:
                now = time.monotonic()
                self._before_heartbeat(now)
                if membership.heartbeat_due(now):
                    await self._heartbeat_once()
                    self._answered.set()
                    continue
                wait = None
                if membership.state in self.in_group and not membership.in_flight:
                    wait = max(membership.next_heartbeat - now, 0.0)
                self._wakeup.clear()
                try:
                    async with asyncio.timeout(wait):
                        await self._wakeup.wait()
                except TimeoutError:
                    pass
        finally:
            self._answered = None

    async def _wait_while_leaving(self, leaving: Any, timeout: float) -> None:
        """Until the leave (`membership.state` is `leaving`) is answered, at most `timeout`; sent
        from here when the heartbeat task is not running."""
        self.wake()
        deadline = time.monotonic() + timeout
        while self.membership.state is leaving and time.monotonic() < deadline:
            answered = self._answered
            if answered is None:
                await self._heartbeat_once()
                continue
            answered.clear()
            try:
                async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
                    await answered.wait()
            except TimeoutError:
                break

    def _before_heartbeat(self, now: float) -> None:
        """Each turn of the loop, before the due check."""

    @abstractmethod
    async def _heartbeat_once(self) -> None:
        """Send one heartbeat and apply its answer (the subclass's protocol)."""
