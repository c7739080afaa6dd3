"""A share group member's heartbeats (ShareGroupHeartbeat), on the network loop: sent when due
by `membership.ShareMembership`, and leaving on close."""

from __future__ import annotations

import logging
import time
from typing import Callable

from gregor.client.consumer.heartbeat_member import HeartbeatMember
from gregor.client.errors import ClientErrorCode, KafkaException, error_for
from gregor.client.network import NetworkClient
from gregor.client.share.membership import IN_GROUP, ShareMembership, ShareMemberState

log = logging.getLogger(__name__)

SHARE_GROUP_HEARTBEAT_VERSIONS = (1, 1)


class ShareGroupMember(HeartbeatMember):
    in_group = IN_GROUP

    def __init__(self, network: NetworkClient, membership: ShareMembership) -> None:
        super().__init__(network, membership.group_id)
        self.membership: ShareMembership = membership
        self.on_answer: Callable[[], None] | None = None
        """Called after each answered heartbeat (the assignment may have changed)."""

    async def subscribe(self, topics: tuple[str, ...]) -> None:
        self.membership.subscribe(topics, time.monotonic())
        self.wake()

    async def leave(self, timeout: float = 5.0) -> None:
        """Leave with epoch -1 and wait (at most `timeout`) for the coordinator's answer."""
        membership = self.membership
        if membership.leave(time.monotonic()):
            await self._wait_while_leaving(ShareMemberState.LEAVING, timeout)

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
