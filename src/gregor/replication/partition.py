"""One partition replica hosted by this broker, as its leader.

The high watermark is the offset below which records are visible to consumers. With a single
replica in the ISR it follows the log end offset on every append; the follower side and the
ISR-driven high watermark of a replicated partition extend this class.
"""

from __future__ import annotations

import uuid
from typing import Callable

from gregor.storage.log import AppendInfo, Log


class Partition:
    __slots__ = ("topic", "index", "topic_id", "log", "leader_epoch", "replicas", "isr",
                 "_on_high_watermark")

    def __init__(self, topic: str, index: int, topic_id: uuid.UUID, log: Log, leader_epoch: int,
                 replicas: list[int], isr: list[int],
                 on_high_watermark: Callable[["Partition"], None]) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.leader_epoch = leader_epoch
        self.replicas = replicas
        self.isr = isr
        self._on_high_watermark = on_high_watermark
        self._advance_high_watermark()

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    def append_as_leader(self, records: memoryview, now_ms: int) -> AppendInfo:
        info = self.log.append_as_leader(records, self.leader_epoch, now_ms, check_keys=True)
        if not info.duplicate:
            self._advance_high_watermark()
        return info

    def _advance_high_watermark(self) -> None:
        if len(self.isr) <= 1 and self.log.high_watermark != self.log.log_end_offset:
            self.log.high_watermark = self.log.log_end_offset
            self._on_high_watermark(self)
