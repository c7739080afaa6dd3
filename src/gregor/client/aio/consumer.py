"""The asyncio consumer: `await consumer.getmany()` and `async for record in consumer` on the
caller's event loop, no thread.

The fetcher, heartbeat and metadata refresher are tasks on the caller's loop; the group protocol,
positions, commits and record decoding are the sync consumer's (`ConsumerBase`), so group
membership, assignors, `auto.offset.reset`, read_committed and rebalance listeners behave the
same. A rebalance (revoking, JoinGroup, the leader's assignment, SyncGroup, assigning, with the
listener called in between) runs as one task of its own: a poll waits for it at most its
timeout and a later poll picks it up, as the sync consumer's does.

Cancellation: records are taken from the fetch buffer (and positions moved past them) only
right before a poll returns them, with no await in between, so cancelling a poll never loses a
record; cancelling it while it waits for a rebalance leaves the rebalance running. A cancelled
commit may or may not have reached the coordinator (commit again to be sure). Requests are
written whole, so no connection is left with half a request.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import re
import time
from typing import Any, AsyncIterator, Callable, Iterable, Mapping

from gregor.client.admin import OffsetAndMetadata, OffsetSpec
from gregor.client.aio.binding import LoopBinding, check_timeout
from gregor.client.assignors import RebalanceChanges
from gregor.client.consumer.base import ConsumerBase, OffsetAndTimestamp, partitions_arg
from gregor.client.consumer.records import ConsumerRecord, ConsumerRecords, RecordChunk
from gregor.client.consumer.subscription import SubscriptionType
from gregor.client.errors import ClientErrorCode, KafkaException
from gregor.client.network import ByPartition, PartitionMetadata, TopicPartition

log = logging.getLogger(__name__)

class Consumer(ConsumerBase):
    """Reads records from topics in asyncio code (see the module doc).

    Configuration as the sync `gregor.client.Consumer`. Use it as `async with Consumer(...)`,
    or call `start()` (optional: the first call starts it) and `close()`.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(config, kwargs)
        self._binding = LoopBinding("consumer")
        self._listener: Any = None
        self._rebalance: asyncio.Task[None] | None = None
        self._data = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._fetcher.on_data = self._data.set
        self._pending: collections.deque[ConsumerRecord] = collections.deque()

    async def start(self) -> None:
        """Start the fetcher, heartbeat and metadata tasks on the running loop (the first call does it)."""
        self._ready()

    def _ready(self) -> None:
        if self._closed:
            raise KafkaException(ClientErrorCode._STATE, "the consumer is closed")
        if self._binding.bind():
            self._network.start()
            self._spawn(self._fetcher.run(), "fetcher")
            group = self._member or self._membership
            if group is not None:
                self._spawn(group.heartbeat_loop(), "heartbeat")
            if self._member is not None:
                self._member.on_change = self._data.set

    def _spawn(self, coro: Any, what: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.client_id}-{what}")
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("%s failed: %s", task.get_name(), task.exception())

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- subscriptions --

    def subscribe(self, topics: Iterable[str] | str | re.Pattern[str], listener: Any = None) -> None:
        """Join the group for `topics` (names) or a pattern (a compiled regex, or a string
        starting with '^'); partitions come from the group's assignor at the next poll.
        `listener`: a ConsumerRebalanceListener whose methods may be coroutines."""
        self._ready()
        self._rewind_pending()
        if self._subscribe(topics):
            self._spawn(self._network.refresh_metadata(None), "pattern-metadata")
        else:
            self._spawn(self._want_topics(self._subscriptions.topics), "metadata")
        self._listener = listener
        if self._member is not None:
            self._spawn(self._member.subscribe(*self._member_subscription()), "subscribe")

    def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Read exactly these partitions, without a group (positions from committed offsets when
        group.id is set, else auto.offset.reset)."""
        self._ready()
        wanted = partitions_arg(partitions)
        self._rewind_pending()
        self._subscriptions.assign_from_user(wanted)
        self._spawn(self._want_topics({partition.topic for partition in wanted}), "metadata")
        self._fetcher.wakeup()

    async def unsubscribe(self) -> None:
        """Give up every partition (leaving the group, with the listener told)."""
        self._ready()
        self._rewind_pending()
        await self._leave_group("the consumer unsubscribed")
        self._subscriptions.unsubscribe()
        self._fetcher.clear_buffer()

    # -- polling --

    async def getmany(self, timeout_ms: float = 0, max_records: int | None = None,
                      ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records by partition (at most `max_records`, default max.poll.records), waiting up to
        `timeout_ms` for some (aiokafka's getmany, without its partition filter)."""
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)):
            raise TypeError(f"timeout_ms must be a number, not {type(timeout_ms).__name__}")
        limit = self._limit(max_records)
        records: dict[TopicPartition, list[ConsumerRecord]] = await self._collect(
            max(timeout_ms, 0) / 1000, lambda _: self._fetcher.collect(limit))
        if not records:
            return {}
        if self._interceptors:
            result = self._interceptors.on_consume(ConsumerRecords(records))
            return {partition: result.records(partition) for partition in result.partitions()}
        return records

    async def poll(self, timeout: float = 0.0) -> ConsumerRecords:
        """The sync consumer's `poll`: at most max.poll.records records, waiting up to `timeout` s."""
        seconds = check_timeout(timeout) or 0.0
        records = await self._collect(seconds, self._fetcher.collect)
        if not records:
            return ConsumerRecords()
        result = ConsumerRecords(records)
        return self._interceptors.on_consume(result) if self._interceptors else result

    async def poll_columns(self, timeout: float = 0.0) -> list[RecordChunk]:
        """The sync consumer's `poll_columns`: records as column chunks of raw bytes."""
        seconds = check_timeout(timeout) or 0.0
        if self._interceptors:
            raise KafkaException(ClientErrorCode._STATE, "poll_columns bypasses interceptor.classes; "
                                                         "use poll with interceptors")
        chunks: list[RecordChunk] = await self._collect(seconds, self._fetcher.collect_columns)
        return chunks

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ConsumerRecord]:
        """One record at a time, waiting as long as it takes; ends when the consumer is closed.

        Records are fetched a poll's worth at a time and kept in `_pending` until handed over;
        the consumer counts a pending record as not yet consumed: `position` and `commit()` stop
        before it, and any other poll first moves positions back to it (`_rewind_pending`). So a
        commit inside the loop commits exactly what the loop saw, and breaking out of the loop
        (or cancelling it) loses nothing: the next iteration or poll starts at the first record
        not handed over."""
        while not self._closed:
            if not self._pending:
                try:
                    records = await self._collect(None, self._fetcher.collect)
                except KafkaException as error:
                    if self._closed and error.code == ClientErrorCode._STATE:
                        return
                    raise
                self._pending.extend(self._interceptors.on_consume(ConsumerRecords(records)) if self._interceptors
                                     else ConsumerRecords(records))
                continue
            yield self._pending.popleft()

    def _rewind_pending(self) -> None:
        """Move positions back to the first record of each partition not handed over yet."""
        first: dict[TopicPartition, ConsumerRecord] = {}
        for record in self._pending:
            first.setdefault(TopicPartition(record.topic, record.partition), record)
        self._pending.clear()
        for partition, record in first.items():
            state = self._subscriptions.assignment.get(partition)
            if state is not None and state.position is not None and state.position > record.offset:
                self._subscriptions.seek(partition, record.offset, record.leader_epoch)
        if first:
            self._fetcher.wakeup()

    def _drop_pending(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Forget the pending records of `partitions`: their positions were moved."""
        gone = {TopicPartition(*partition) for partition in partitions}
        self._pending = collections.deque(record for record in self._pending
                                          if TopicPartition(record.topic, record.partition) not in gone)

    def _own(self, changes: RebalanceChanges) -> None:
        super()._own(changes)
        if self._pending:
            self._pending = collections.deque(record for record in self._pending
                                              if TopicPartition(record.topic, record.partition) in self._owned)

    def _offsets_to_commit(self, offsets: ByPartition[int | OffsetAndMetadata] | None
                           ) -> dict[TopicPartition, OffsetAndMetadata]:
        """As the base's, with pending records of an iteration counted as not consumed."""
        result = super()._offsets_to_commit(offsets)
        if offsets is None:
            for record in reversed(self._pending):
                partition = TopicPartition(record.topic, record.partition)
                if partition in result:
                    result[partition] = OffsetAndMetadata(record.offset, "", record.leader_epoch)
        return result

    def _limit(self, max_records: int | None) -> int:
        if max_records is None:
            return int(self._max_poll_records)
        if isinstance(max_records, bool) or not isinstance(max_records, int):
            raise TypeError(f"max_records must be an int or None, not {type(max_records).__name__}")
        if max_records < 1:
            raise ValueError(f"max_records must be at least 1: {max_records}")
        return max_records

    async def _collect(self, timeout: float | None, collect: Callable[[int], tuple[Any, KafkaException | None]]
                       ) -> Any:
        """What `collect` gathers once some records are there or `timeout` (None: no limit)
        passed, with the group, auto commits and positions looked after in between. Nothing is
        awaited between collecting records and returning them."""
        self._ready()
        self._check_subscribed()
        self._rewind_pending()
        deadline = None if timeout is None else time.monotonic() + timeout
        self._note_poll()
        while True:
            if self._closed:
                raise KafkaException(ClientErrorCode._STATE, "the consumer is closed")
            if self._pending_error is not None:
                pending, self._pending_error = self._pending_error, None
                raise pending
            if self._subscriptions.group_managed:
                await self._poll_group(deadline)
            if self._auto_commit_due(self._rebalance is not None):
                self._commit_in_background(self._offsets_to_commit(None))
            if not self._positions_known():
                await self._update_positions(time.monotonic() if deadline is None else deadline)
            self._data.clear()
            records, error = collect(self._max_poll_records)
            if records:
                if error is not None:
                    self._pending_error = error
                self._fetcher.wakeup()
                return records
            if error is not None:
                raise error
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return records
            try:
                async with asyncio.timeout(remaining):
                    await self._data.wait()
            except TimeoutError:
                pass

    # -- group membership --

    async def _poll_group(self, deadline: float | None) -> None:
        """Drive the rebalance until this member is stable or `deadline` passes (the rebalance
        then goes on in its task and a later poll takes it up)."""
        if self._member is not None:
            await self._poll_consumer_group()
            return
        self._group_changed()
        while self._rebalance is not None or self._rebalance_needed():
            if self._rebalance is None:
                self._rebalance = self._spawn(self._rebalance_round(), "rebalance")
            task = self._rebalance
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            done, _ = await asyncio.wait({task}, timeout=remaining)
            if not done:
                return
            self._rebalance = None
            if task.cancelled():
                raise KafkaException(ClientErrorCode._DESTROY, "the consumer was closed during a rebalance")
            error = task.exception()
            if error is not None:
                raise error

    async def _poll_consumer_group(self) -> None:
        """KIP-848: as the sync consumer's (lost partitions and rejoining after a fencing, then the
        reconciliation step: commit and revoke, then assign), awaiting a coroutine listener."""
        member = self._member
        assert member is not None
        lost = self._member_out_of_group()
        if lost is not None:
            await self._apply_changes(lost)
            await member.rejoin()
        if self._subscriptions.kind is SubscriptionType.AUTO_PATTERN:
            self._match_pattern()  # what subscription() reports; the broker matches the regex itself
        step = await member.next_step()
        if step is None:
            return
        changes = self._member_changes(step)
        try:
            if changes.revoked and self._auto_commit:
                await self._commit_quietly(changes.revoked)
            await self._apply_changes(changes)
        finally:
            await member.step_done(step)

    async def _rebalance_round(self) -> None:
        """One rebalance of this member, from revoking to assigning, with the listener told."""
        while self._rebalance_needed():
            before = self._changes_before_join()
            if before.revoked:
                # this round runs beside the application's polls: from here on they get nothing of
                # the partitions given up, so the commit below covers all that was handed over
                self._subscriptions.mark_pending_revocation(before.revoked)
            if before.revoked and self._auto_commit:
                await self._commit_quietly(before.revoked)
            await self._apply_changes(before)
            await self._want_topics(self._subscriptions.topics)
            data = await self._join_and_sync(self._join_protocols(), time.monotonic() + self._default_timeout)
            if data is not None:
                changes = self._assignment_changes(data)
                await self._apply_changes(changes)
                self._after_assignment(changes)
        self._data.set()

    async def _apply_changes(self, changes: RebalanceChanges) -> None:
        """The listener told and the ownership changed; what goes is handed over no more from the
        start, since the listener may await while the application polls."""
        for going in (changes.revoked, changes.lost):
            if going:
                self._subscriptions.mark_pending_revocation(going)
        if changes.revoked is not None:
            await self._call_listener("on_partitions_revoked", changes.revoked)
        if changes.lost is not None:
            await self._call_listener("on_partitions_lost", changes.lost)
        self._own(changes)
        if changes.assigned is not None:
            await self._call_listener("on_partitions_assigned", changes.assigned)

    async def _call_listener(self, method: str, partitions: Iterable[Any]) -> None:
        if self._listener is None:
            return
        partitions = [TopicPartition(partition.topic, partition.partition) for partition in partitions]
        try:
            outcome = getattr(self._listener, method)(partitions)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            log.exception("rebalance listener %s failed", method)

    async def _leave_group(self, reason: str) -> None:
        membership = self._membership
        if membership is None or not self._subscriptions.group_managed:
            return
        if self._member is not None:
            changes = self._member_leaving()
            if changes.revoked and self._auto_commit:
                await self._commit_quietly(changes.revoked)
            await self._apply_changes(changes)
            await self._member.leave(reason)
            return
        if self._rebalance is not None:
            self._rebalance.cancel()
            await asyncio.gather(self._rebalance, return_exceptions=True)
            self._rebalance = None
        changes = self._changes_before_leave()
        if changes.revoked and self._auto_commit:
            await self._commit_quietly(changes.revoked)
        await self._apply_changes(changes)
        await membership.leave(reason)

    # -- positions --

    async def position(self, partition: tuple[str, int], timeout: float | None = None) -> int:
        """The offset of the next record a poll returns for `partition` (looked up if needed)."""
        self._ready()
        state = self._subscriptions.state(partition)
        for record in self._pending:
            if (record.topic, record.partition) == tuple(partition):
                return record.offset
        if state.position is None:
            await self._update_positions(time.monotonic() + self._timeout(timeout))
        position = self._subscriptions.state(partition).position
        assert position is not None
        return position

    def seek(self, partition: tuple[str, int], offset: int | OffsetAndMetadata) -> None:
        """Polls go on from `offset` for `partition`."""
        self._ready()
        offset, epoch = self._seek_target(offset)
        self._drop_pending([partition])
        self._subscriptions.seek(partition, offset, epoch)
        self._fetcher.wakeup()

    def seek_to_beginning(self, partitions: Iterable[tuple[str, int]] | None = None) -> None:
        self._seek_to("earliest", partitions)

    def seek_to_end(self, partitions: Iterable[tuple[str, int]] | None = None) -> None:
        self._seek_to("latest", partitions)

    def _seek_to(self, strategy: str, partitions: Iterable[tuple[str, int]] | None) -> None:
        self._ready()
        targets = list(self._subscriptions.assignment) if partitions is None else partitions_arg(partitions)
        self._drop_pending(targets)
        self._subscriptions.request_reset(targets, strategy)

    def pause(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Stop fetching these partitions until resume() (the group does not notice)."""
        self._set_paused(partitions, True)

    def resume(self, partitions: Iterable[tuple[str, int]]) -> None:
        self._set_paused(partitions, False)

    def _set_paused(self, partitions: Iterable[tuple[str, int]], paused: bool) -> None:
        self._ready()
        self._rewind_pending()
        for partition in partitions_arg(partitions):
            self._subscriptions.state(partition).paused = paused
        self._fetcher.wakeup()

    # -- offsets --

    async def commit(self, offsets: ByPartition[int | OffsetAndMetadata] | None = None,
                     timeout: float | None = None) -> None:
        """Commit `offsets` (the next offsets to read), or every consumed position, and return
        once the coordinator accepted them."""
        self._ready()
        to_commit = self._offsets_to_commit(offsets)
        if not to_commit:
            return
        await self._commit(to_commit, time.monotonic() + self._timeout(timeout))
        if self._interceptors:
            self._interceptors.on_commit(to_commit)

    def _commit_in_background(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        if offsets:
            self._spawn(self._commit(offsets, time.monotonic() + self._default_timeout), "auto-commit")

    async def _commit_quietly(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Auto commit before giving partitions up; failures are logged (the next owner re-reads)."""
        wanted = {TopicPartition(*partition) for partition in partitions}
        offsets = {partition: value for partition, value in self._offsets_to_commit(None).items() if partition in wanted}
        if not offsets:
            return
        try:
            await self._commit(offsets, time.monotonic() + self._default_timeout)
        except KafkaException as error:
            log.warning("auto commit before revocation failed: %s", error)

    async def committed(self, partitions: Iterable[tuple[str, int]], timeout: float | None = None
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where it has none)."""
        self._ready()
        if self._group_id is None:
            raise KafkaException(ClientErrorCode._INVALID_ARG, "committed offsets need group.id")
        wanted = partitions_arg(partitions)
        found = await self._committed(wanted, time.monotonic() + self._timeout(timeout))
        return {partition: found[partition] if partition in found and found[partition].offset >= 0 else None
                for partition in wanted}

    async def offsets_for_times(self, timestamps: ByPartition[int], timeout: float | None = None
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is at least the given one (None past the end)."""
        if not isinstance(timestamps, Mapping):
            raise TypeError(f"timestamps must be a mapping, not {type(timestamps).__name__}")
        return await self._listed({TopicPartition(*partition): OffsetSpec.for_timestamp(timestamp)
                                   for partition, timestamp in timestamps.items()}, timeout, with_timestamps=True)

    async def beginning_offsets(self, partitions: Iterable[tuple[str, int]], timeout: float | None = None
                                ) -> dict[TopicPartition, int]:
        return await self._listed({p: OffsetSpec.earliest() for p in partitions_arg(partitions)}, timeout)

    async def end_offsets(self, partitions: Iterable[tuple[str, int]], timeout: float | None = None
                          ) -> dict[TopicPartition, int]:
        return await self._listed({p: OffsetSpec.latest() for p in partitions_arg(partitions)}, timeout)

    async def _listed(self, specs: dict[TopicPartition, OffsetSpec], timeout: float | None, *,
                      with_timestamps: bool = False) -> dict[TopicPartition, Any]:
        self._ready()
        found = await self._list_offsets(specs, time.monotonic() + self._timeout(timeout))
        return self._listed_result(found, with_timestamps)

    async def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionMetadata]:
        self._ready()
        if not isinstance(topic, str):
            raise TypeError(f"topic must be str, not {type(topic).__name__}")
        cluster = await self._network.refresh_metadata([topic], timeout_ms=self._timeout(timeout) * 1000)
        metadata = cluster.topics.get(topic)
        return [] if metadata is None else [metadata.partitions[index] for index in sorted(metadata.partitions)]

    async def list_topics(self, timeout: float | None = None) -> dict[str, list[PartitionMetadata]]:
        self._ready()
        cluster = await self._network.refresh_metadata(None, timeout_ms=self._timeout(timeout) * 1000)
        return {name: [metadata.partitions[index] for index in sorted(metadata.partitions)]
                for name, metadata in cluster.topics.items()
                if not (metadata.is_internal and self._exclude_internal)}

    def _timeout(self, timeout: float | None) -> float:
        seconds = check_timeout(timeout)
        return self._default_timeout if seconds is None else seconds

    # -- closing --

    async def close(self, timeout: float | None = None) -> None:
        """Commit (with auto commit), leave the group (dynamic members), stop the tasks and close
        the connections. Idempotent; a poll or iteration waiting meanwhile ends."""
        if self._closed:
            return
        self._closed = True
        self._data.set()
        if self._binding.loop is None:
            self._interceptors.close()
            return
        try:
            if self._auto_commit and self._subscriptions.assignment:
                try:
                    await self._commit(self._offsets_to_commit(None), time.monotonic() + self._timeout(timeout))
                except KafkaException as error:
                    log.warning("auto commit on close failed: %s", error)
            await self._leave_group("the consumer is being closed")
        except KafkaException as error:
            log.warning("leaving the group on close failed: %s", error)
        finally:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._network.close()
            self._interceptors.close()
