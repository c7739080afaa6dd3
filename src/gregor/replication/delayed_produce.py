"""acks=all produces waiting for the high watermark: Kafka's DelayedProduce purgatory for one partition.

Each waits for the high watermark to reach the offset after its last record. When it does, it is
answered NONE if the committed ISR still has `min.insync.replicas` members, else
NOT_ENOUGH_REPLICAS_AFTER_APPEND (the records are written but less replicated than asked).
Waiters of an earlier leader epoch are answered NOT_LEADER_OR_FOLLOWER (their records may have
been truncated since), expired ones REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from dataclasses import dataclass

from gregor.protocol.error_codes import ErrorCode
from gregor.replication.effects import ProduceCompleted


@dataclass(frozen=True)
class _Waiter:
    required_offset: int
    leader_epoch: int
    deadline_ms: int
    token: object


class DelayedProduces:
    def __init__(self) -> None:
        self._waiting: list[_Waiter] = []

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, required_offset: int, leader_epoch: int, deadline_ms: int, token: object) -> None:
        self._waiting.append(_Waiter(required_offset, leader_epoch, deadline_ms, token))

    def complete(self, high_watermark: int, leader_epoch: int | None, isr_size: int, min_isr: int,
                 now_ms: int) -> list[ProduceCompleted]:
        """Answer every waiter that can be answered; `leader_epoch` None when no longer leader."""
        done = []
        keep = []
        for waiter in self._waiting:
            error = check_replicated(waiter.required_offset, high_watermark, isr_size, min_isr)
            if leader_epoch is None or waiter.leader_epoch != leader_epoch:
                error = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif error is None and now_ms >= waiter.deadline_ms:
                error = ErrorCode.REQUEST_TIMED_OUT
            if error is None:
                keep.append(waiter)
            else:
                done.append(ProduceCompleted(waiter.token, error))
        self._waiting = keep
        return done


def check_replicated(required_offset: int, high_watermark: int, isr_size: int, min_isr: int) -> ErrorCode | None:
    """Kafka's checkEnoughReplicasReachOffset: None while the high watermark is below `required_offset`."""
    if high_watermark < required_offset:
        return None
    return ErrorCode.NONE if isr_size >= min_isr else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
