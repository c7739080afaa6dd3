"""Gregor's Consumer: Kafka's consumer semantics for any Kafka-compatible cluster.

`poll` runs on the application thread: it takes part in the group (joining, rebalancing and
calling the rebalance listener there, as Java's consumer does), finds starting positions
(committed offsets, else `auto.offset.reset`), commits automatically every
`auto.commit.interval.ms`, and hands over records that the network thread prefetched. A
background task heartbeats. Like Java's KafkaConsumer it is not thread-safe: a call from a
second thread while one is inside raises, except `wakeup()`. The steps of a poll that do not
wait live in `base`, shared with the asyncio consumer.
"""

from __future__ import annotations

import concurrent.futures
import logging
import re
import threading
import time
from typing import Any, Awaitable, Callable, Iterable, Mapping, TypeVar

from gregor.client.admin import OffsetAndMetadata, OffsetSpec
from gregor.client.assignors import RebalanceChanges
from gregor.client.consumer.base import ConsumerBase, OffsetAndTimestamp, partitions_arg
from gregor.client.consumer.records import ConsumerRecords, RecordChunk
from gregor.client.consumer.subscription import SubscriptionType
from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError
from gregor.client.network import ByPartition, NetworkThread, PartitionMetadata, TopicPartition
from gregor.client.thread_owner import ThreadOwner

log = logging.getLogger(__name__)

_GRACE_SECONDS = 5.0
T = TypeVar("T")

__all__ = ["CommitCallback", "Consumer", "ConsumerRebalanceListener", "OffsetAndMetadata", "OffsetAndTimestamp",
           "WakeupException"]


class WakeupException(KafkaException):
    """A blocking call was interrupted by `Consumer.wakeup()`."""


class ConsumerRebalanceListener:
    """Override what you need; the callbacks run inside `poll` on the application thread."""

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        """Partitions this member gives up (commit what you processed here)."""

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        """Partitions this member now owns."""

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        """Partitions that may already belong to another member; by default treated as revoked."""
        self.on_partitions_revoked(partitions)


CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], "KafkaException | None"], Any]


class Consumer(ConsumerBase):
    """Reads records from topics (see the module doc); one thread at a time."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Kafka's consumer keys in `config` and/or as keyword arguments with underscores
        (`bootstrap_servers=`, `group_id=`); an unknown key raises ConfigError naming it."""
        super().__init__(config, kwargs)
        self._listener: ConsumerRebalanceListener | None = None
        self._rebalance: concurrent.futures.Future | None = None
        self._commit_completions: list[Callable[[], None]] = []
        self._completions_lock = threading.Lock()
        self._owner = ThreadOwner("Consumer")
        self._woken = False
        self._thread = NetworkThread(name=f"gregor-{self.client_id}")
        self._thread.run(self._start(), _GRACE_SECONDS)
        self._fetch_task = self._thread.spawn(self._fetcher.run(), name=f"{self.client_id}-fetcher")
        group = self._member or self._membership
        if group is not None:
            self._heartbeat_task = self._thread.spawn(group.heartbeat_loop(), name=f"{self.client_id}-heartbeat")

    async def _start(self) -> None:
        self._network.start()

    def _run(self, coro: Awaitable[T], deadline: float) -> T:
        """Run a shared step on the network thread, waiting at most until `deadline` (and the grace)."""
        return self._thread.run(coro, max(deadline - time.monotonic(), 0.001) + _GRACE_SECONDS)

    # -- the one-thread rule --

    def _acquire(self) -> None:
        self._owner.acquire()

    def _release(self) -> None:
        self._owner.release()

    def _enter(self) -> None:
        self._acquire()
        if self._closed:
            self._release()
            raise KafkaException(ClientErrorCode._STATE, "the consumer is closed")

    # -- subscriptions --

    def subscribe(self, topics: Iterable[str] | str | re.Pattern,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        """Join the group for `topics` (names) or a pattern (a compiled regex, or a string
        starting with '^'); partitions come from the group's assignor."""
        self._enter()
        try:
            if self._subscribe(topics):
                self._update_pattern_subscription(refresh=True)
            else:
                self._want(self._subscriptions.topics)
            self._listener = listener
            if self._member is not None:
                self._thread.run(self._member.subscribe(*self._member_subscription()), _GRACE_SECONDS)
        finally:
            self._release()

    def _want(self, topics: Iterable[str]) -> None:
        self._thread.run(self._want_topics(topics), _GRACE_SECONDS)

    def _update_pattern_subscription(self, refresh: bool = False) -> None:
        if refresh:
            self._thread.run(self._network.refresh_metadata(None), self._default_timeout)
        self._match_pattern()

    def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Read exactly these partitions, without a group (positions from committed offsets when
        group.id is set, else auto.offset.reset)."""
        self._enter()
        try:
            partitions = partitions_arg(partitions)
            self._subscriptions.assign_from_user(partitions)
            self._want({partition.topic for partition in partitions})
            self._thread.call_soon(self._fetcher.wakeup)
        finally:
            self._release()

    def unsubscribe(self) -> None:
        """Give up every partition (leaving the group, with the listener told)."""
        self._enter()
        try:
            self._leave_group("the consumer unsubscribed")
            self._subscriptions.unsubscribe()
            self._fetcher.clear_buffer()
        finally:
            self._release()

    # -- polling --

    def poll(self, timeout: float = 0.0) -> ConsumerRecords:
        """Records fetched since the last poll (at most max.poll.records), waiting up to
        `timeout` seconds for some. Runs rebalances, listener callbacks and auto commits."""
        self._enter()
        try:
            records = self._collect_within(timeout, self._fetcher.collect)
            if not records:
                return ConsumerRecords()
            result = ConsumerRecords(records)
            return self._interceptors.on_consume(result) if self._interceptors else result
        finally:
            self._release()

    def poll_columns(self, timeout: float = 0.0) -> list[RecordChunk]:
        """As `poll`, for bulk readers: the records as column chunks (offsets, timestamps, keys,
        values, headers), each batch decoded in one pass without an object per record, which is
        several times cheaper. Keys and values are raw bytes (the deserializers are not applied);
        positions, commits, control records and read_committed behave as with `poll`. A consumer
        with interceptors refuses it, since they could not see the records."""
        self._enter()
        try:
            if self._interceptors:
                raise KafkaException(ClientErrorCode._STATE, "poll_columns bypasses interceptor.classes; "
                                                             "use poll with interceptors")
            return self._collect_within(timeout, self._fetcher.collect_columns)
        finally:
            self._release()

    def _collect_within(self, timeout: float, collect: Callable[[int], tuple[Any, KafkaException | None]]) -> Any:
        """What `collect` gathers once some records are there or `timeout` passed (empty then), with
        the group, auto commits and positions looked after in between."""
        self._check_subscribed()
        deadline = time.monotonic() + max(timeout, 0.0)
        self._note_poll()
        while True:
            self._check_wakeup()
            self._run_commit_completions()
            if self._pending_error is not None:
                error, self._pending_error = self._pending_error, None
                raise error
            if self._subscriptions.group_managed:
                self._poll_group(deadline)
            if self._auto_commit_due(self._rebalance is not None):
                self._commit_async(self._offsets_to_commit(None), None)
            if not self._positions_known():
                self._run(self._update_positions(deadline), max(deadline, time.monotonic() + self._default_timeout))
            records, error = collect(self._max_poll_records)
            if records:
                if error is not None:
                    self._pending_error = error
                if self._fetcher.take_freed():
                    self._thread.call_soon(self._fetcher.wakeup)
                return records
            if error is not None:
                raise error
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return records
            with self._fetcher.data_ready:
                if not self._fetcher.has_data():
                    self._fetcher.data_ready.wait(min(remaining, 0.05))

    def _check_wakeup(self) -> None:
        if self._woken:
            self._woken = False
            raise WakeupException(ClientErrorCode._INTR, "the consumer was woken up (wakeup())")

    def wakeup(self) -> None:
        """Make the current or next blocking call raise WakeupException; safe from any thread and
        from a signal handler. A handler runs on the main thread wherever it was interrupted, which
        may be inside poll holding the fetch lock, so this takes no lock it would wait for: the flag
        is a plain attribute, and a poll that is waiting for data is notified only if the lock is
        free (else it sees the flag at its next check, within 50 ms)."""
        self._woken = True
        if self._fetcher.data_ready.acquire(blocking=False):
            try:
                self._fetcher.data_ready.notify_all()
            finally:
                self._fetcher.data_ready.release()

    # -- group membership (application thread) --

    def _poll_group(self, deadline: float) -> None:
        if self._member is not None:
            self._poll_consumer_group()
            return
        self._group_changed()
        if self._rebalance is not None or self._rebalance_needed():
            self._rejoin(deadline)

    def _rejoin(self, deadline: float) -> None:
        """Drive the rebalance until this member is stable or `deadline` (the poll's) passes;
        a JoinGroup/SyncGroup still in flight then is picked up by the next poll, as in Java. The
        member turns stable on the network thread before its assignment is taken here, so a
        finished rebalance is taken whatever the state says."""
        while self._rebalance is not None or self._rebalance_needed():
            self._check_wakeup()
            if self._rebalance is None:
                self._rebalance = self._thread.submit(self._join_and_sync(self._prepare_join(),
                                                                         time.monotonic() + self._default_timeout))
            try:
                data = self._rebalance.result(min(max(deadline - time.monotonic(), 0.0), 0.05))
            except concurrent.futures.TimeoutError:
                if time.monotonic() >= deadline:
                    return
                continue
            except concurrent.futures.CancelledError:
                self._rebalance = None
                raise KafkaException(ClientErrorCode._DESTROY, "the consumer was closed during a rebalance") from None
            except BaseException:
                self._rebalance = None
                raise
            self._rebalance = None
            if data is not None:
                changes = self._assignment_changes(data)
                self._apply_changes(changes)
                self._after_assignment(changes)

    def _poll_consumer_group(self) -> None:
        """KIP-848: report lost partitions and rejoin after a fencing, and run the reconciliation
        step the coordinator's target asks for (commit and revoke, then assign), as Java's
        consumer runs them inside poll; the next heartbeat acknowledges it."""
        member = self._member
        lost = self._member_out_of_group()
        if lost is not None:
            self._apply_changes(lost)
            self._thread.run(member.rejoin(), _GRACE_SECONDS)
        if self._subscriptions.kind is SubscriptionType.AUTO_PATTERN:
            self._match_pattern()  # what subscription() reports; the broker matches the regex itself
        step = self._thread.run(member.next_step(), _GRACE_SECONDS)
        if step is None:
            return
        changes = self._member_changes(step)
        try:
            if changes.revoked and self._auto_commit:
                self._commit_quietly(changes.revoked)
            self._apply_changes(changes)
        finally:
            self._thread.run(member.step_done(step), _GRACE_SECONDS)

    def _prepare_join(self) -> list[tuple[str, bytes]]:
        """Revoke what the protocol gives up before joining (listener, auto commit) and build
        this member's subscription for each assignor."""
        before = self._changes_before_join()
        if before.revoked and self._auto_commit:
            self._commit_quietly(list(before.revoked))
        self._apply_changes(before)
        self._want(self._subscriptions.topics)
        return self._join_protocols()

    def _apply_changes(self, changes: RebalanceChanges) -> None:
        """Update what this member owns and call the listener (revoked or lost, then assigned)."""
        if changes.revoked is not None:
            self._call_listener("on_partitions_revoked", changes.revoked)
        if changes.lost is not None:
            self._call_listener("on_partitions_lost", changes.lost)
        self._own(changes)
        if changes.assigned is not None:
            self._call_listener("on_partitions_assigned", changes.assigned)

    def _call_listener(self, method: str, partitions: Iterable[Any]) -> None:
        if self._listener is None:
            return
        partitions = [TopicPartition(partition.topic, partition.partition) for partition in partitions]
        try:
            getattr(self._listener, method)(partitions)
        except WakeupException:
            raise
        except Exception:
            log.exception("rebalance listener %s failed", method)

    def _leave_group(self, reason: str) -> None:
        membership = self._membership
        if membership is None or not self._subscriptions.group_managed:
            return
        if self._member is not None:
            changes = self._member_leaving()
            if changes.revoked and self._auto_commit:
                self._commit_quietly(changes.revoked)
            self._apply_changes(changes)
            self._thread.run(self._member.leave(reason), _GRACE_SECONDS * 2)
            return
        if self._rebalance is not None:
            self._rebalance.cancel()
            self._rebalance = None
        changes = self._changes_before_leave()
        if changes.revoked and self._auto_commit:
            self._commit_quietly(changes.revoked)
        self._apply_changes(changes)
        self._thread.run(membership.leave(reason), _GRACE_SECONDS * 2)

    # -- positions --

    def position(self, partition: tuple[str, int], timeout: float | None = None) -> int:
        """The offset of the next record poll() will return for `partition` (looked up if needed)."""
        self._enter()
        try:
            state = self._subscriptions.state(partition)
            if state.position is None:
                deadline = time.monotonic() + (self._default_timeout if timeout is None else timeout)
                self._run(self._update_positions(deadline), deadline)
            return self._subscriptions.state(partition).position
        finally:
            self._release()

    def seek(self, partition: tuple[str, int], offset: int | OffsetAndMetadata) -> None:
        """poll() goes on from `offset` for `partition`."""
        self._enter()
        try:
            offset, epoch = self._seek_target(offset)
            self._subscriptions.seek(partition, offset, epoch)
            self._thread.call_soon(self._fetcher.wakeup)
        finally:
            self._release()

    def seek_to_beginning(self, partitions: Iterable[tuple[str, int]] | None = None) -> None:
        self._seek_to("earliest", partitions)

    def seek_to_end(self, partitions: Iterable[tuple[str, int]] | None = None) -> None:
        self._seek_to("latest", partitions)

    def _seek_to(self, strategy: str, partitions: Iterable[tuple[str, int]] | None) -> None:
        self._enter()
        try:
            targets = list(self._subscriptions.assignment) if partitions is None else list(partitions)
            self._subscriptions.request_reset(targets, strategy)
        finally:
            self._release()

    def pause(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Stop fetching these partitions until resume() (the group does not notice)."""
        self._set_paused(partitions, True)

    def resume(self, partitions: Iterable[tuple[str, int]]) -> None:
        self._set_paused(partitions, False)

    def _set_paused(self, partitions: Iterable[tuple[str, int]], paused: bool) -> None:
        self._enter()
        try:
            for partition in partitions:
                self._subscriptions.state(partition).paused = paused
            self._thread.call_soon(self._fetcher.wakeup)
        finally:
            self._release()

    # -- offsets --

    def commit(self, offsets: ByPartition[int | OffsetAndMetadata] | None = None, *,
               asynchronous: bool = False, callback: CommitCallback | None = None,
               timeout: float | None = None) -> None:
        """Commit `offsets` (the next offsets to read), or every consumed position. Synchronous
        by default; with asynchronous=True it returns at once and `callback(offsets, error)`
        runs in a later poll/commit/close on this thread (as Java's commitAsync)."""
        self._enter()
        try:
            self._run_commit_completions()
            to_commit = self._offsets_to_commit(offsets)
            if asynchronous:
                self._commit_async(to_commit, callback)
            else:
                self._commit_sync(to_commit, timeout)
                self._run_commit_completions()  # earlier asynchronous commits were answered first, as in Java
                if callback is not None:
                    callback(to_commit, None)
        finally:
            self._release()

    def commit_async(self, offsets: ByPartition[int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Java's commitAsync: `commit(offsets, asynchronous=True, callback=callback)`."""
        self.commit(offsets, asynchronous=True, callback=callback)

    def _commit_sync(self, offsets: dict[TopicPartition, OffsetAndMetadata], timeout: float | None) -> None:
        if not offsets:
            return
        deadline = time.monotonic() + (self._default_timeout if timeout is None else timeout)
        try:
            self._run(self._commit(offsets, deadline), deadline)
        except TimeoutError:
            raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, "offset commit timed out") from None
        if self._interceptors:
            self._interceptors.on_commit(offsets)

    def _commit_async(self, offsets: dict[TopicPartition, OffsetAndMetadata], callback: CommitCallback | None) -> None:
        if not offsets:
            return
        future = self._thread.submit(self._commit(offsets, time.monotonic() + self._default_timeout))

        def done(finished: Any) -> None:
            error = finished.exception()

            def complete() -> None:
                if error is None and self._interceptors:
                    self._interceptors.on_commit(offsets)
                if callback is not None:
                    callback(offsets, error)
                elif error is not None:
                    log.warning("asynchronous offset commit failed: %s", error)
            with self._completions_lock:
                self._commit_completions.append(complete)
        future.add_done_callback(done)

    def _run_commit_completions(self) -> None:
        with self._completions_lock:
            completions, self._commit_completions = self._commit_completions, []
        for complete in completions:
            try:
                complete()
            except Exception:
                log.exception("offset commit callback failed")

    def _commit_quietly(self, partitions: Iterable[TopicPartition]) -> None:
        """Auto commit before giving partitions up; failures are logged (the next owner re-reads)."""
        wanted = set(partitions)
        offsets = {partition: value for partition, value in self._offsets_to_commit(None).items() if partition in wanted}
        try:
            self._commit_sync(offsets, None)
        except KafkaException as error:
            log.warning("auto commit before revocation failed: %s", error)

    def committed(self, partitions: Iterable[tuple[str, int]], timeout: float | None = None
                  ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where it has none)."""
        self._enter()
        try:
            if self._group_id is None:
                raise KafkaException(ClientErrorCode._INVALID_ARG, "committed offsets need group.id")
            wanted = partitions_arg(partitions)
            deadline = time.monotonic() + (self._default_timeout if timeout is None else timeout)
            found = self._run(self._committed(wanted, deadline), deadline)
            return {partition: found[partition] if partition in found and found[partition].offset >= 0 else None
                    for partition in wanted}
        finally:
            self._release()

    def offsets_for_times(self, timestamps: ByPartition[int], timeout: float | None = None
                          ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is at least the given one (None past the end)."""
        return self._listed({TopicPartition(*partition): OffsetSpec.for_timestamp(timestamp)
                             for partition, timestamp in timestamps.items()}, timeout, with_timestamps=True)

    def beginning_offsets(self, partitions: Iterable[tuple[str, int]], timeout: float | None = None) -> dict:
        return self._listed({TopicPartition(*p): OffsetSpec.earliest() for p in partitions}, timeout)

    def end_offsets(self, partitions: Iterable[tuple[str, int]], timeout: float | None = None) -> dict:
        return self._listed({TopicPartition(*p): OffsetSpec.latest() for p in partitions}, timeout)

    def _listed(self, specs: dict[TopicPartition, OffsetSpec], timeout: float | None, *,
                with_timestamps: bool = False) -> dict:
        self._enter()
        try:
            deadline = time.monotonic() + (self._default_timeout if timeout is None else timeout)
            return self._listed_result(self._run(self._list_offsets(specs, deadline), deadline), with_timestamps)
        finally:
            self._release()

    def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionMetadata]:
        self._enter()
        try:
            deadline = self._default_timeout if timeout is None else timeout
            cluster = self._thread.run(self._network.refresh_metadata([topic], timeout_ms=deadline * 1000),
                                       deadline + _GRACE_SECONDS)
            metadata = cluster.topics.get(topic)
            return [] if metadata is None else [metadata.partitions[index] for index in sorted(metadata.partitions)]
        finally:
            self._release()

    def list_topics(self, timeout: float | None = None) -> dict[str, list[PartitionMetadata]]:
        self._enter()
        try:
            deadline = self._default_timeout if timeout is None else timeout
            cluster = self._thread.run(self._network.refresh_metadata(None, timeout_ms=deadline * 1000),
                                       deadline + _GRACE_SECONDS)
            return {name: [metadata.partitions[index] for index in sorted(metadata.partitions)]
                    for name, metadata in cluster.topics.items()
                    if not (metadata.is_internal and self._exclude_internal)}
        finally:
            self._release()

    # -- closing --

    def close(self, timeout: float | None = None) -> None:
        """Commit (with auto commit), leave the group (dynamic members), release everything. Idempotent."""
        if self._closed:
            return
        self._acquire()
        try:
            self._closed = True
            try:
                self._run_commit_completions()
                if self._auto_commit and self._subscriptions.assignment:
                    try:
                        self._commit_sync(self._offsets_to_commit(None), timeout)
                    except KafkaException as error:
                        log.warning("auto commit on close failed: %s", error)
                self._leave_group("the consumer is being closed")
            except KafkaException as error:
                log.warning("leaving the group on close failed: %s", error)
            finally:
                try:
                    self._thread.run(self._network.close(), _GRACE_SECONDS)
                except KafkaException:
                    pass
                self._thread.close(_GRACE_SECONDS)
                self._interceptors.close()
        finally:
            self._release()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
