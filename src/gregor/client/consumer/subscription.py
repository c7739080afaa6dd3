"""What the consumer reads: its subscription or manual assignment and each partition's position.

Owned by the application thread; the fetcher on the network thread reads positions through
`fetch_targets`, under the same lock, and a fetch answered for a position that has since moved
(a seek, a revocation) is dropped when the application thread collects it.
"""

from __future__ import annotations

import enum
import re
import threading
from dataclasses import dataclass, field
from typing import Iterable

from gregor.client.errors import ClientErrorCode, KafkaException
from gregor.client.network import TopicPartition


class SubscriptionType(enum.Enum):
    NONE = "none"
    AUTO_TOPICS = "topics"
    AUTO_PATTERN = "pattern"
    USER_ASSIGNED = "assigned"


@dataclass
class PartitionState:
    position: int | None = None
    position_epoch: int | None = None
    reset_strategy: str | None = None
    paused: bool = False
    #: given up in a rebalance that has begun (its offsets are being committed): neither fetched nor
    #: handed to the application any more, as Java's consumer marks partitions pending revocation
    pending_revocation: bool = False
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1


@dataclass
class SubscriptionState:
    default_reset: str
    kind: SubscriptionType = SubscriptionType.NONE
    topics: frozenset[str] = frozenset()
    pattern: re.Pattern | None = None
    assignment: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _set_kind(self, kind: SubscriptionType) -> None:
        if self.kind not in (SubscriptionType.NONE, kind):
            raise KafkaException(ClientErrorCode._STATE,
                                 "subscription to topics, subscription to a pattern and manual assignment "
                                 "are mutually exclusive; call unsubscribe() first")
        self.kind = kind

    def subscribe(self, topics: Iterable[str]) -> bool:
        """Subscribe to topics by name; True if the set changed."""
        self._set_kind(SubscriptionType.AUTO_TOPICS)
        return self.set_topics(topics)

    def subscribe_pattern(self, pattern: re.Pattern) -> None:
        self._set_kind(SubscriptionType.AUTO_PATTERN)
        self.pattern = pattern

    def set_topics(self, topics: Iterable[str]) -> bool:
        new = frozenset(topics)
        changed = new != self.topics
        self.topics = new
        return changed

    def assign_from_user(self, partitions: Iterable[tuple[str, int]]) -> None:
        self._set_kind(SubscriptionType.USER_ASSIGNED)
        self._assign({TopicPartition(*partition) for partition in partitions})
        self.topics = frozenset(partition.topic for partition in self.assignment)

    def assign_from_group(self, partitions: Iterable[TopicPartition]) -> None:
        self._assign(set(partitions))

    def _assign(self, partitions: set[TopicPartition]) -> None:
        with self.lock:
            self.assignment = {partition: self.assignment.get(partition) or PartitionState()
                               for partition in sorted(partitions)}

    def unsubscribe(self) -> None:
        with self.lock:
            self.assignment = {}
        self.kind = SubscriptionType.NONE
        self.topics = frozenset()
        self.pattern = None

    @property
    def group_managed(self) -> bool:
        return self.kind in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)

    def state(self, partition: tuple[str, int]) -> PartitionState:
        state = self.assignment.get(TopicPartition(*partition))
        if state is None:
            raise KafkaException(ClientErrorCode._STATE,
                                 f"partition {partition[0]}-{partition[1]} is not assigned to this consumer")
        return state

    def seek(self, partition: tuple[str, int], offset: int, epoch: int | None = None) -> None:
        with self.lock:
            state = self.state(partition)
            state.position, state.position_epoch, state.reset_strategy = offset, epoch, None

    def request_reset(self, partitions: Iterable[tuple[str, int]], strategy: str) -> None:
        with self.lock:
            for partition in partitions:
                state = self.state(partition)
                state.position, state.reset_strategy = None, strategy

    def mark_pending_revocation(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Partitions about to be revoked: nothing more of them is fetched or handed over, so
        that the offsets committed before they go cover every record the application got."""
        with self.lock:
            for partition in partitions:
                state = self.assignment.get(TopicPartition(*partition))
                if state is not None:
                    state.pending_revocation = True

    def missing_positions(self) -> list[TopicPartition]:
        """Assigned partitions with neither a position nor a pending reset."""
        return [partition for partition, state in self.assignment.items()
                if state.position is None and state.reset_strategy is None]

    def awaiting_reset(self) -> dict[TopicPartition, str]:
        return {partition: state.reset_strategy for partition, state in self.assignment.items()
                if state.reset_strategy is not None}

    def fetch_targets(self) -> list[tuple[TopicPartition, int]]:
        """(partition, position) of every partition that can be fetched now."""
        with self.lock:
            return [(partition, state.position)
                    for partition, state in self.assignment.items()
                    if state.position is not None and not state.paused and not state.pending_revocation]

    def consumed_offsets(self) -> dict[TopicPartition, tuple[int, int | None]]:
        """Positions to commit: (offset, leader epoch) per partition with a position."""
        return {partition: (state.position, state.position_epoch)
                for partition, state in self.assignment.items() if state.position is not None}
