"""A share group member's heartbeats (ShareGroupHeartbeat), on the network loop: sent when due
by `membership.ShareMembership`, and leaving on close."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from gregor.client.consumer.coordinator import CoordinatorLink
from gregor.client.errors import ClientErrorCode, KafkaException, error_for
from gregor.client.network import NetworkClient
from gregor.client.share.membership import IN_GROUP, ShareMemberState, ShareMembership

log = logging.getLogger(__name__)

SHARE_GROUP_HEARTBEAT_VERSIONS = (1, 1)


class ShareGroupMember(CoordinatorLink):
    def __init__(self, network: NetworkClient, membership: ShareMembership) -> None:
        super().__init__(network, membership.group_id)
        self.membership = membership
        self.on_answer: Callable[[], None] | None = None
        """Called after each answered heartbeat (the assignment may have changed)."""
        self._wakeup: asyncio.Event | None = None
        self._answered: asyncio.Event | None = None

    def wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def subscribe(self, topics: tuple[str, ...]) -> None:
        self.membership.subscribe(topics, time.monotonic())
        self.wake()

    async def leave(self, timeout: float = 5.0) -> None:
        """Leave with epoch -1 and wait (at most `timeout`) for the coordinator's answer."""
        membership = self.membership
        if not membership.leave(time.monotonic()):
            return
        self.wake()
        deadline = time.monotonic() + timeout
        while membership.state is ShareMemberState.LEAVING and time.monotonic() < deadline:
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

    async def heartbeat_loop(self) -> None:
        self._wakeup = asyncio.Event()
        self._answered = asyncio.Event()
        membership = self.membership
        try:
            while True:
                now = time.monotonic()
                if membership.heartbeat_due(now):
                    await self._heartbeat_once()
                    self._answered.set()
                    continue
                wait = None
                if membership.state in IN_GROUP and not membership.in_flight:
                    wait = max(membership.next_heartbeat - now, 0.0)
                self._wakeup.clear()
                try:
                    async with asyncio.timeout(wait):
                        await self._wakeup.wait()
                except TimeoutError:
                    pass
        finally:
            self._answered = None

    async def _heartbeat_once(self) -> None:
        membership = self.membership
        request = membership.heartbeat(time.monotonic())
        try:
            response = await self._send(request, SHARE_GROUP_HEARTBEAT_VERSIONS,
                                        time.monotonic() + self.network.settings.request_timeout_ms / 1000)
        except KafkaException as error:
            membership.on_failure(time.monotonic())
            if error.code == ClientErrorCode._DESTROY:
                raise
            log.debug("ShareGroupHeartbeat of %s failed: %s", self.group_id, error)
            self.coordinators.invalidate(self.group_id)
            return
        self._check_moved(response.error_code)
        membership.on_response(response, time.monotonic())
        if response.error_code:
            log.debug("ShareGroupHeartbeat of %s answered %s", self.group_id, error_for(response.error_code).name)
        if membership.fatal is not None:
            log.error("share consumer of group %s: %s", self.group_id, membership.fatal)
        if self.on_answer is not None:
            self.on_answer()
