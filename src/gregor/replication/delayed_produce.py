"""acks=all produces waiting for the high watermark: Kafka's DelayedProduce purgatory for one partition.

Each waits for the high watermark to reach the offset after its last record. When it does, it is
answered NONE if the committed ISR still has `min.insync.replicas` members, else
NOT_ENOUGH_REPLICAS_AFTER_APPEND (the records are written but less replicated than asked).
Waiters of an earlier leader epoch are answered NOT_LEADER_OR_FOLLOWER (their records may have
been truncated since), expired ones REQUEST_TIMED_OUT.

The waiters are kept in two heaps, by the offset they wait for and by their deadline, so that a
high-watermark move (every follower fetch) costs what it answers, not what is waiting: with many
small acks=all requests in flight, a scan of every waiter per move grows with the backlog it is
meant to clear. A change of leader epoch, which is rare, sweeps them all.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from gregor.protocol.error_codes import ErrorCode
from gregor.replication.effects import ProduceCompleted


@dataclass
class _Waiter:
    required_offset: int
    sequence: int
    leader_epoch: int
    deadline_ms: int
    token: object
    done: bool = False


class DelayedProduces:
    def __init__(self) -> None:
        # (key, sequence, waiter): tuples compare in C, and the unique sequence settles every tie
        self._by_offset: list[tuple[int, int, _Waiter]] = []
        self._by_deadline: list[tuple[int, int, _Waiter]] = []
        self._epochs: dict[int, int] = {}  # leader epoch -> waiters of it
        self._count = 0
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return self._count

    def add(self, required_offset: int, leader_epoch: int, deadline_ms: int, token: object) -> None:
        waiter = _Waiter(required_offset, next(self._sequence), leader_epoch, deadline_ms, token)
        heapq.heappush(self._by_offset, (required_offset, waiter.sequence, waiter))
        heapq.heappush(self._by_deadline, (deadline_ms, waiter.sequence, waiter))
        self._epochs[leader_epoch] = self._epochs.get(leader_epoch, 0) + 1
        self._count += 1

    def next_deadline(self) -> int | None:
        """The earliest deadline of a waiter still waiting (when `complete` has expiries to answer)."""
        self._drop_done_deadlines()
        return self._by_deadline[0][0] if self._by_deadline else None

    def first_required(self) -> int | None:
        """The smallest offset a waiter still waits for the high watermark to reach."""
        while self._by_offset and self._by_offset[0][2].done:
            heapq.heappop(self._by_offset)
        return self._by_offset[0][0] if self._by_offset else None

    def complete(self, high_watermark: int, leader_epoch: int | None, isr_size: int, min_isr: int,
                 now_ms: int) -> list[ProduceCompleted]:
        """Answer every waiter that can be answered; `leader_epoch` None when no longer leader."""
        if not self._count:
            return []
        if leader_epoch is None or len(self._epochs) > 1 or leader_epoch not in self._epochs:
            done = self._sweep_other_epochs(leader_epoch)
        else:
            done = []
        while self._by_offset and (self._by_offset[0][2].done or self._by_offset[0][0] <= high_watermark):
            _, _, waiter = heapq.heappop(self._by_offset)
            if not waiter.done:  # reached: NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND below min.insync
                done.append(self._answer(waiter, ErrorCode.NONE if isr_size >= min_isr
                                         else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND))
        while self._by_deadline and (self._by_deadline[0][2].done or self._by_deadline[0][0] <= now_ms):
            _, _, waiter = heapq.heappop(self._by_deadline)
            if not waiter.done:
                done.append(self._answer(waiter, ErrorCode.REQUEST_TIMED_OUT))
        return done

    def _sweep_other_epochs(self, leader_epoch: int | None) -> list[ProduceCompleted]:
        """Answer, in the order they came, the waiters of any epoch but `leader_epoch`."""
        stale = sorted((w for _, _, w in self._by_offset if not w.done and w.leader_epoch != leader_epoch),
                       key=lambda w: w.sequence)
        return [self._answer(waiter, ErrorCode.NOT_LEADER_OR_FOLLOWER) for waiter in stale]

    def _answer(self, waiter: _Waiter, error: ErrorCode) -> ProduceCompleted:
        waiter.done = True
        self._count -= 1
        remaining = self._epochs[waiter.leader_epoch] - 1
        if remaining:
            self._epochs[waiter.leader_epoch] = remaining
        else:
            del self._epochs[waiter.leader_epoch]
        if not self._count:
            self._by_offset.clear()
            self._by_deadline.clear()
        return ProduceCompleted(waiter.token, error)

    def _drop_done_deadlines(self) -> None:
        while self._by_deadline and self._by_deadline[0][2].done:
            heapq.heappop(self._by_deadline)


def check_replicated(required_offset: int, high_watermark: int, isr_size: int, min_isr: int) -> ErrorCode | None:
    """Kafka's checkEnoughReplicasReachOffset: None while the high watermark is below `required_offset`."""
    if high_watermark < required_offset:
        return None
    return ErrorCode.NONE if isr_size >= min_isr else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
