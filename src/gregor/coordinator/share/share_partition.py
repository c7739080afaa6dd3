"""One share-partition: which records of a topic-partition a share group has in flight.

Kafka's SharePartition, sans-IO. The share-partition start offset (SPSO) is the first offset
not yet finished with; every offset from there up to the end offset (SPEO) that holds a record
is in flight with a state, a delivery count and, while ACQUIRED, the member holding it and the
deadline of its acquisition lock (offsets without one, holes in the log and control batches,
are never delivered and cost nothing). Offsets at and past the end offset have never been
delivered.

Events, each with `now_ms`: records read from the log offered for acquisition (`acquire`),
acknowledgements (`acknowledge`, all-or-nothing per request partition: a record the member does
not hold refuses the lot with INVALID_RECORD_STATE), a member's records handed back
(`release_member`), lock expiry (`expire_locks`, due at `next_deadline()`), the log start moving
(`advance_log_start`). A record released or timed out after `delivery_count_limit` deliveries
is ARCHIVED, never offered again; so is a REJECTed one. Every change bumps `version`, which the
edge uses to know a snapshot (`snapshot()`) is due for the share state store.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterable

from gregor.coordinator.share.record_state import TERMINAL, TRANSITIONS, AcknowledgeType, RecordState
from gregor.protocol.error_codes import ErrorCode


@dataclass(frozen=True)
class SharePartitionConfig:
    """`group.share.record.lock.duration.ms`, `group.share.delivery.count.limit`,
    `group.share.partition.max.record.locks` (Kafka's defaults)."""

    lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000


@dataclass
class InFlightRecord:
    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock_deadline_ms: int | None = None


@dataclass(frozen=True)
class AcquiredRange:
    """Offsets first..last (inclusive) acquired together, all delivered `delivery_count` times."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class StateBatch:
    """A run of in-flight offsets with one state and delivery count, as persisted."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass(frozen=True)
class Acknowledgement:
    """One acknowledgement batch of a request: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]

    def type_of(self, offset: int) -> int:
        return self.types[0] if len(self.types) == 1 else self.types[offset - self.first_offset]


@dataclass(frozen=True)
class ShareSnapshot:
    """What survives a restart: the start offset and every in-flight record's state and count
    (an ACQUIRED record is stored AVAILABLE: its lock does not outlive the broker, its delivery
    does)."""

    start_offset: int
    state_epoch: int
    batches: tuple[StateBatch, ...]


class SharePartition:
    def __init__(self, config: SharePartitionConfig, start_offset: int, state_epoch: int = 0) -> None:
        self.config = config
        self.start_offset = start_offset
        self.state_epoch = state_epoch
        self.version = 0
        self._records: dict[int, InFlightRecord] = {}
        self._end_offset = start_offset
        self._locks: list[tuple[int, int]] = []  # (deadline, offset), stale entries skipped

    @classmethod
    def from_snapshot(cls, config: SharePartitionConfig, snapshot: ShareSnapshot) -> SharePartition:
        """The partition as persisted, in the persisted state epoch (only the group's coordinator
        moves it: `state_fencing`); records that were acquired are available again with the
        deliveries they already had."""
        partition = cls(config, snapshot.start_offset, snapshot.state_epoch)
        for batch in snapshot.batches:
            state = RecordState.AVAILABLE if batch.state == RecordState.ACQUIRED else batch.state
            for offset in range(max(batch.first_offset, snapshot.start_offset), batch.last_offset + 1):
                partition._records[offset] = InFlightRecord(state, batch.delivery_count)
                partition._end_offset = max(partition._end_offset, offset + 1)
        partition._advance_start()
        return partition

    # -- queries

    @property
    def end_offset(self) -> int:
        return self._end_offset

    def record(self, offset: int) -> InFlightRecord | None:
        return self._records.get(offset)

    def in_flight(self) -> dict[int, InFlightRecord]:
        return dict(self._records)

    @property
    def in_flight_count(self) -> int:
        """Records tracked between the start and end offsets, in any state (Kafka's
        InFlightMessageCount)."""
        return len(self._records)

    @property
    def acquired_count(self) -> int:
        """Records delivered to a member and not yet acknowledged or timed out."""
        return sum(1 for rec in self._records.values() if rec.state == RecordState.ACQUIRED)

    def acquirable_from(self) -> int | None:
        """The offset a log read for this partition should start at, or None when nothing can be
        acquired now (no available record, and the in-flight window is full)."""
        available = [offset for offset, rec in self._records.items() if rec.state == RecordState.AVAILABLE]
        if available:
            return min(available)
        if self._window_open():
            return self._end_offset
        return None

    def next_deadline(self) -> int | None:
        while self._locks:
            deadline, offset = self._locks[0]
            rec = self._records.get(offset)
            if rec is not None and rec.state == RecordState.ACQUIRED and rec.lock_deadline_ms == deadline:
                return deadline
            heapq.heappop(self._locks)
        return None

    # -- events

    def acquire(self, member_id: str, batches: Iterable[tuple[int, int, bool]], max_records: int,
                now_ms: int, lock_duration_ms: int | None = None) -> list[AcquiredRange]:
        """Acquire for `member_id` what may be delivered among the log's batches
        ((base offset, last offset, never delivered) in log order: a control batch, or under
        read_committed an aborted transaction's; `isolation.undeliverable`). `max_records` is a
        soft limit at batch boundaries, as Kafka's SharePartition: a batch is acquired whole,
        and the next one only while fewer than `max_records` offsets are acquired (so the first
        batch is always whole, however big). Offsets the log does not hold between batches, and
        batches never delivered, are archived without delivery. The locks last
        `lock_duration_ms` (the group's config), else the partition config's."""
        acquired: list[AcquiredRange] = []
        count = 0
        deadline = now_ms + (lock_duration_ms if lock_duration_ms is not None else self.config.lock_duration_ms)
        for base, last, never_delivered in batches:
            if count >= max_records:
                break
            if last < self.start_offset:
                continue
            if base > self._end_offset:
                if not self._window_open():
                    break
                self._archive_new(self._end_offset, base - 1)
            if never_delivered:
                if last >= self._end_offset:
                    self._archive_new(max(base, self._end_offset), last)
                continue
            for offset in range(max(base, self.start_offset), last + 1):
                rec = self._records.get(offset)
                if rec is None:
                    if offset < self._end_offset or not self._window_open():
                        continue
                    rec = InFlightRecord(RecordState.AVAILABLE, 0)
                    self._records[offset] = rec
                    self._end_offset = offset + 1
                if rec.state != RecordState.AVAILABLE:
                    continue
                self._move(rec, RecordState.ACQUIRED)
                rec.delivery_count += 1
                rec.member_id = member_id
                rec.lock_deadline_ms = deadline
                heapq.heappush(self._locks, (deadline, offset))
                count += 1
                previous = acquired[-1] if acquired else None
                if previous and previous.last_offset == offset - 1 and previous.delivery_count == rec.delivery_count:
                    acquired[-1] = AcquiredRange(previous.first_offset, offset, rec.delivery_count)
                else:
                    acquired.append(AcquiredRange(offset, offset, rec.delivery_count))
        if acquired:
            self.version += 1
        self._advance_start()
        return acquired

    def acknowledge(self, member_id: str, acknowledgements: list[Acknowledgement], now_ms: int) -> ErrorCode:
        """Apply a request partition's acknowledgements, all or none: INVALID_REQUEST for a
        malformed batch (bad range, type count, unknown type), INVALID_RECORD_STATE when any
        offset is not held by `member_id` (the member's records stay as they were)."""
        changes: list[tuple[int, AcknowledgeType]] = []
        previous_last = -1
        for ack in acknowledgements:
            if ack.first_offset > ack.last_offset or ack.first_offset <= previous_last:
                return ErrorCode.INVALID_REQUEST
            previous_last = ack.last_offset
            if len(ack.types) not in (1, ack.last_offset - ack.first_offset + 1):
                return ErrorCode.INVALID_REQUEST
            for offset in range(ack.first_offset, ack.last_offset + 1):
                try:
                    kind = AcknowledgeType(ack.type_of(offset))
                except ValueError:
                    return ErrorCode.INVALID_REQUEST
                rec = self._records.get(offset)
                if rec is None or rec.state != RecordState.ACQUIRED or rec.member_id != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
                changes.append((offset, kind))
        for offset, kind in changes:
            rec = self._records[offset]
            if kind == AcknowledgeType.ACCEPT:
                self._finish(rec, RecordState.ACKNOWLEDGED)
            elif kind in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
                self._finish(rec, RecordState.ARCHIVED)
            else:
                self._release(rec)
        if changes:
            self.version += 1
        self._advance_start()
        return ErrorCode.NONE

    def release_member(self, member_id: str, now_ms: int) -> int:
        """Hand back every record `member_id` holds (its share session closed or it left);
        how many."""
        released = 0
        for rec in self._records.values():
            if rec.state == RecordState.ACQUIRED and rec.member_id == member_id:
                self._release(rec)
                released += 1
        if released:
            self.version += 1
            self._advance_start()
        return released

    def expire_locks(self, now_ms: int) -> int:
        """Release the records whose acquisition lock ran out by `now_ms`; how many."""
        expired = 0
        while (deadline := self.next_deadline()) is not None and deadline <= now_ms:
            _, offset = heapq.heappop(self._locks)
            self._release(self._records[offset])
            expired += 1
        if expired:
            self.version += 1
            self._advance_start()
        return expired

    def advance_log_start(self, log_start_offset: int) -> None:
        """Records the log no longer holds (retention, DeleteRecords) leave the window."""
        if log_start_offset <= self.start_offset:
            return
        for offset in [o for o in self._records if o < log_start_offset]:
            del self._records[offset]
        self.start_offset = log_start_offset
        self._end_offset = max(self._end_offset, log_start_offset)
        self.version += 1
        self._advance_start()

    def snapshot(self) -> ShareSnapshot:
        batches: list[StateBatch] = []
        for offset in sorted(self._records):
            rec = self._records[offset]
            state = RecordState.AVAILABLE if rec.state == RecordState.ACQUIRED else rec.state
            if batches and batches[-1].last_offset == offset - 1 and batches[-1].state == state \
                    and batches[-1].delivery_count == rec.delivery_count:
                batches[-1] = StateBatch(batches[-1].first_offset, offset, state, rec.delivery_count)
            else:
                batches.append(StateBatch(offset, offset, state, rec.delivery_count))
        return ShareSnapshot(self.start_offset, self.state_epoch, tuple(batches))

    # -- internals

    def _window_open(self) -> bool:
        return len(self._records) < self.config.max_record_locks

    def _archive_new(self, first: int, last: int) -> None:
        """Offsets never to be delivered (a hole in the log, a control batch): the window moves
        past them and nothing is kept for them (an offset in the window without a record is one
        of these), so a hole of any size costs nothing."""
        self._end_offset = max(self._end_offset, last + 1)
        self.version += 1

    def _release(self, rec: InFlightRecord) -> None:
        if rec.delivery_count >= self.config.delivery_count_limit:
            self._finish(rec, RecordState.ARCHIVED)
        else:
            self._finish(rec, RecordState.AVAILABLE)

    def _finish(self, rec: InFlightRecord, state: RecordState) -> None:
        self._move(rec, state)
        rec.member_id = None
        rec.lock_deadline_ms = None

    @staticmethod
    def _move(rec: InFlightRecord, state: RecordState) -> None:
        if state not in TRANSITIONS[rec.state]:
            raise AssertionError(f"illegal share record transition {rec.state.name} -> {state.name}")
        rec.state = state

    def _advance_start(self) -> None:
        while self.start_offset < self._end_offset:
            rec = self._records.get(self.start_offset)
            if rec is None:
                self.start_offset = min((o for o in self._records if o > self.start_offset), default=self._end_offset)
                continue
            if rec.state not in TERMINAL:
                break
            del self._records[self.start_offset]
            self.start_offset += 1
