"""The active controller's periodic leader rebalance (`auto.leader.rebalance.enable`).

Every `leader.imbalance.check.interval.seconds` (counted from the first check) the active
controller runs `gregor.controller.leader_balance.rebalance_leaders` on its committed image and
commits the preferred-leader elections it returns. One of ControllerServer's duties.
"""

from __future__ import annotations

import logging
from typing import Any

from gregor.broker.services import QuorumService
from gregor.controller.leader_balance import rebalance_leaders
from gregor.controller.operations import ControllerResult
from gregor.metadata.image import MetadataImage
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import Message

log = logging.getLogger("gregor.controller")


class LeaderRebalance:
    def __init__(self, config: Any) -> None:
        self.enabled = bool(config.get("auto.leader.rebalance.enable"))
        self.interval_ms = int(config.get("leader.imbalance.check.interval.seconds")) * 1000
        self.percentage = int(config.get("leader.imbalance.per.broker.percentage"))
        self._due_ms: int | None = None

    def next_due(self, now_ms: int) -> int | None:
        """When `run_if_due` next checks (None: disabled)."""
        if not self.enabled:
            return None
        return now_ms if self._due_ms is None else self._due_ms

    async def run_if_due(self, server: QuorumService, now_ms: int) -> int:
        """Check the balance when the interval has passed; the number of leaders moved."""
        if not self.enabled:
            return 0
        if self._due_ms is None:
            self._due_ms = now_ms + self.interval_ms
        if now_ms < self._due_ms:
            return 0
        self._due_ms = now_ms + self.interval_ms
        try:
            records = await server.submit(lambda: _elections(server.image, self.percentage))
        except KafkaError as error:
            log.info("leader rebalance not committed: %s", error)
            return 0
        if records:
            log.info("leader rebalance: %d partition(s) led by their preferred replica again", len(records))
        return len(records)


def _elections(image: MetadataImage, percentage: int) -> ControllerResult[tuple[Message, ...]]:
    records = tuple(rebalance_leaders(image, percentage))
    return ControllerResult(records, records)
