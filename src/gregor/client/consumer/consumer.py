"""Gregor's Consumer: Kafka's consumer semantics for any Kafka-compatible cluster.

`poll` runs on the application thread: it takes part in the group (joining, rebalancing and
calling the rebalance listener there, as Java's consumer does), finds starting positions
(committed offsets, else `auto.offset.reset`), commits automatically every
`auto.commit.interval.ms`, and hands over records that the network thread prefetched. A
background task heartbeats. Like Java's KafkaConsumer it is not thread-safe: a call from a
second thread while one is inside raises, except `wakeup()`.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from gregor.client.admin import AdminOperations, IsolationLevel, OffsetAndMetadata, OffsetSpec
from gregor.client.assignors import (
    ASSIGNORS, Assignment, PartitionAssignor, RebalanceProtocol, Subscription, changes_before_join,
    changes_before_leave, changes_on_assignment, decode_assignment, decode_subscription, encode_assignment,
    encode_subscription,
)
from gregor.client.config import ConfigError, Role, parse_config
from gregor.client.consumer.coordinator import GroupMembership, MemberState
from gregor.client.consumer.fetcher import READ_COMMITTED, READ_UNCOMMITTED, FetchSettings, Fetcher
from gregor.client.consumer.records import ConsumerRecords, RecordChunk
from gregor.client.consumer.subscription import SubscriptionState, SubscriptionType
from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError
from gregor.client.interceptors import ConsumerInterceptors, resolve_consumer_interceptors
from gregor.client.network import NetworkClient, NetworkSettings, NetworkThread, PartitionMetadata, TopicPartition
from gregor.client.serialization import resolve_deserializer

log = logging.getLogger(__name__)

_CLIENT_NUMBERS = itertools.count(1)
_GRACE_SECONDS = 5.0
_AUTO_CREATE_TIMEOUT_MS = 4000  # within _GRACE_SECONDS; the metadata refresher retries after it
_RETRIES_UNTIL_DEADLINE = 2**31 - 1  # offset lookups retry until default.api.timeout.ms, as Java's do


@dataclass(frozen=True)
class OffsetAndTimestamp:
    offset: int
    timestamp: int
    leader_epoch: int | None = None


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


class Consumer:
    """Reads records from topics (see the module doc); one thread at a time."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Kafka's consumer keys in `config` and/or as keyword arguments with underscores
        (`bootstrap_servers=`, `group_id=`); an unknown key raises ConfigError naming it."""
        parsed = parse_config(Role.CONSUMER, config, **kwargs)
        if parsed["group.protocol"].lower() != "classic":
            raise ConfigError("group.protocol: only the classic group protocol is implemented (KIP-848's "
                              "'consumer' protocol is not)")
        self.client_id = parsed["client.id"] or f"consumer-{parsed['group.id'] or 'standalone'}-{next(_CLIENT_NUMBERS)}"
        self._config = parsed
        self._group_id: str | None = parsed["group.id"] or None
        self._default_timeout = parsed["default.api.timeout.ms"] / 1000
        self._auto_commit = bool(parsed["enable.auto.commit"]) and self._group_id is not None
        self._auto_commit_interval = parsed["auto.commit.interval.ms"] / 1000
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        self._max_poll_records = parsed["max.poll.records"]
        self._isolation = READ_COMMITTED if parsed["isolation.level"] == "read_committed" else READ_UNCOMMITTED
        self._exclude_internal = parsed["exclude.internal.topics"]
        self._assignors = [self._make_assignor(item) for item in parsed["partition.assignment.strategy"]]
        protocols = {protocol for assignor in self._assignors for protocol in assignor.supported_protocols}
        self._protocol = RebalanceProtocol.COOPERATIVE if all(
            RebalanceProtocol.COOPERATIVE in assignor.supported_protocols for assignor in self._assignors) \
            and RebalanceProtocol.COOPERATIVE in protocols else RebalanceProtocol.EAGER
        self._interceptors: ConsumerInterceptors = resolve_consumer_interceptors(parsed["interceptor.classes"])
        self._subscriptions = SubscriptionState(default_reset=parsed["auto.offset.reset"])
        self._listener: ConsumerRebalanceListener | None = None
        self._owned: frozenset[TopicPartition] = frozenset()
        self._joined_partition_counts: dict[str, int] = {}
        self._pending_error: KafkaException | None = None
        self._rebalance: concurrent.futures.Future | None = None
        self._commit_completions: list[Callable[[], None]] = []
        self._completions_lock = threading.Lock()
        self._owner: int | None = None
        self._owner_depth = 0
        self._owner_lock = threading.Lock()
        self._woken = False
        self._closed = False
        self._thread = NetworkThread(name=f"gregor-{self.client_id}")
        self._network = NetworkClient(NetworkSettings.from_config({**parsed, "client.id": self.client_id}))
        self._operations = AdminOperations(self._network, retries=_RETRIES_UNTIL_DEADLINE)
        self._fetcher = Fetcher(self._network, self._subscriptions, FetchSettings(
            min_bytes=parsed["fetch.min.bytes"], max_bytes=parsed["fetch.max.bytes"],
            max_wait_ms=parsed["fetch.max.wait.ms"], partition_max_bytes=parsed["max.partition.fetch.bytes"],
            isolation_level=self._isolation, check_crcs=parsed["check.crcs"],
            request_timeout_ms=parsed["request.timeout.ms"]),
            resolve_deserializer(parsed["key.deserializer"], "key.deserializer"),
            resolve_deserializer(parsed["value.deserializer"], "value.deserializer"))
        self._membership = None if self._group_id is None else GroupMembership(
            self._network, self._group_id, parsed["group.instance.id"],
            session_timeout_ms=parsed["session.timeout.ms"], rebalance_timeout_ms=parsed["max.poll.interval.ms"],
            heartbeat_interval_ms=parsed["heartbeat.interval.ms"])
        self._thread.run(self._start(), _GRACE_SECONDS)
        self._fetch_task = self._thread.spawn(self._fetcher.run(), name=f"{self.client_id}-fetcher")
        if self._membership is not None:
            self._heartbeat_task = self._thread.spawn(self._membership.heartbeat_loop(),
                                                      name=f"{self.client_id}-heartbeat")

    async def _start(self) -> None:
        self._network.start()

    @staticmethod
    def _make_assignor(item: Any) -> PartitionAssignor:
        if isinstance(item, str):
            if item not in ASSIGNORS:
                raise ConfigError(f"partition.assignment.strategy: unknown assignor {item!r}; "
                                  f"built in: {', '.join(sorted(ASSIGNORS))}")
            return ASSIGNORS[item]()
        return item() if isinstance(item, type) else item

    # -- the one-thread rule --

    def _acquire(self) -> None:
        me = threading.get_ident()
        with self._owner_lock:
            if self._owner is not None and self._owner != me:
                raise KafkaException(ClientErrorCode._STATE,
                                     "Consumer is not safe for multi-threaded access: another thread is using it; "
                                     "use one consumer per thread (only wakeup() may be called from elsewhere)")
            self._owner = me
            self._owner_depth += 1

    def _release(self) -> None:
        with self._owner_lock:
            self._owner_depth -= 1
            if self._owner_depth == 0:
                self._owner = None

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
            if self._membership is None:
                raise KafkaException(ClientErrorCode._INVALID_ARG,
                                     "subscribe() needs group.id; use assign() to read without a group")
            if isinstance(topics, str) and topics.startswith("^"):
                topics = re.compile(topics)
            if isinstance(topics, re.Pattern):
                self._subscriptions.subscribe_pattern(topics)
                self._network.cluster.want_all_topics = True
                self._update_pattern_subscription(refresh=True)
            else:
                names = [topics] if isinstance(topics, str) else list(topics)
                if not names or any(not isinstance(name, str) or not name.strip() for name in names):
                    raise KafkaException(ClientErrorCode._INVALID_ARG, f"topic names must be non-empty: {names!r}")
                if self._subscriptions.subscribe(names):
                    self._membership.rejoin_needed = True
                self._want_topics(names)
            self._listener = listener
        finally:
            self._release()

    def _want_topics(self, topics: Iterable[str]) -> None:
        topics = list(topics)

        async def want() -> None:
            cluster = self._network.cluster
            cluster.wanted_topics.update(topics)
            if self._config["allow.auto.create.topics"] and any(topic not in cluster.topics for topic in topics):
                try:
                    await self._network.refresh_metadata(sorted(cluster.wanted_topics), allow_auto_topic_creation=True,
                                                         timeout_ms=_AUTO_CREATE_TIMEOUT_MS)
                    return
                except KafkaException as error:
                    log.debug("metadata request creating %s failed: %s", topics, error)
            self._network.request_metadata_update()
        self._thread.run(want(), _GRACE_SECONDS)

    def _update_pattern_subscription(self, refresh: bool = False) -> None:
        if refresh:
            self._thread.run(self._network.refresh_metadata(None), self._default_timeout)
        cluster = self._network.cluster
        pattern = self._subscriptions.pattern
        matched = [name for name, metadata in cluster.topics.items()
                   if pattern.fullmatch(name) and not (metadata.is_internal and self._exclude_internal)]
        if self._subscriptions.set_topics(matched):
            self._membership.rejoin_needed = True

    def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Read exactly these partitions, without a group (positions from committed offsets when
        group.id is set, else auto.offset.reset)."""
        self._enter()
        try:
            partitions = [TopicPartition(*partition) for partition in partitions]
            self._subscriptions.assign_from_user(partitions)
            self._want_topics({partition.topic for partition in partitions})
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

    def assignment(self) -> set[TopicPartition]:
        return set(self._subscriptions.assignment)

    def subscription(self) -> set[str]:
        return set(self._subscriptions.topics) if self._subscriptions.group_managed else set()

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
        if self._subscriptions.kind is SubscriptionType.NONE:
            raise KafkaException(ClientErrorCode._STATE, "consumer is not subscribed to any topics or "
                                                         "assigned any partitions")
        deadline = time.monotonic() + max(timeout, 0.0)
        if self._membership is not None:
            self._membership.last_poll = time.monotonic()
        while True:
            self._check_wakeup()
            self._run_commit_completions()
            if self._pending_error is not None:
                error, self._pending_error = self._pending_error, None
                raise error
            if self._subscriptions.group_managed:
                self._poll_group(deadline)
            self._maybe_auto_commit()
            self._update_positions(deadline)
            records, error = collect(self._max_poll_records)
            if records:
                if error is not None:
                    self._pending_error = error
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
        membership = self._membership
        if membership.fatal is not None:
            raise membership.fatal
        if self._subscriptions.kind is SubscriptionType.AUTO_PATTERN:
            self._update_pattern_subscription()
        elif self._partition_counts_changed():
            membership.rejoin_needed = True
        if self._rebalance_pending():
            self._rejoin(deadline)

    def _partition_counts_changed(self) -> bool:
        if not self._joined_partition_counts:
            return False
        topics = self._network.cluster.topics
        return any(topic in topics and len(topics[topic].partitions) != count
                   for topic, count in self._joined_partition_counts.items())

    def _rebalance_pending(self) -> bool:
        """A rebalance to start, one under way, or a finished one whose assignment is not taken yet."""
        membership = self._membership
        return self._rebalance is not None or membership.rejoin_needed or membership.state is not MemberState.STABLE

    def _rejoin(self, deadline: float) -> None:
        """Drive the rebalance until this member is stable or `deadline` (the poll's) passes;
        a JoinGroup/SyncGroup still in flight then is picked up by the next poll, as in Java. The
        member turns stable on the network thread before its assignment is taken here, so a
        finished rebalance is taken whatever the state says."""
        while self._rebalance_pending():
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
                self._take_assignment(data)

    def _prepare_join(self) -> list[tuple[str, bytes]]:
        """Revoke what the protocol gives up before joining (listener, auto commit) and build
        this member's subscription for each assignor."""
        membership = self._membership
        before = changes_before_join(self._protocol, self._owned, self._subscriptions.topics,
                                     generation_reset=membership.generation_reset)
        if before.revoked and self._auto_commit:
            self._commit_quietly(list(before.revoked))
        self._apply_changes(before)
        self._want_topics(self._subscriptions.topics)
        return [(assignor.name, encode_subscription(Subscription(
            topics=tuple(sorted(self._subscriptions.topics)),
            user_data=assignor.subscription_user_data(self._subscriptions.topics),
            owned_partitions=tuple(sorted(self._owned)),
            generation_id=membership.generation if membership.generation >= 0 else None)))
            for assignor in self._assignors]

    async def _join_and_sync(self, protocols: list[tuple[str, bytes]], deadline: float) -> bytes | None:
        """JoinGroup, the leader's assignment, SyncGroup: this member's assignment bytes, or
        None when the group asks it to join again."""
        membership = self._membership
        response = await membership.join(protocols, deadline)
        assignments: dict[str, bytes] = {}
        if response.leader == response.member_id:
            assignments = await self._lead(response, deadline)
        return await membership.sync(assignments, deadline)

    def _take_assignment(self, data: bytes) -> None:
        membership = self._membership
        assignment = decode_assignment(data) if data else Assignment()
        assignor = next(item for item in self._assignors if item.name == membership.protocol_name)
        assignor.on_assignment(assignment, membership.generation)
        new_partitions = [TopicPartition(partition.topic, partition.partition) for partition in assignment.partitions]
        changes = changes_on_assignment(self._protocol, self._owned, new_partitions)
        log.info("group %s generation %d: member %s assigned %s", membership.group_id, membership.generation,
                 membership.member_id, ", ".join(f"{p.topic}-{p.partition}" for p in new_partitions) or "nothing")
        self._subscriptions.assign_from_group(changes.owned)
        self._joined_partition_counts = {
            topic: len(self._network.cluster.topics[topic].partitions)
            for topic in self._subscriptions.topics if topic in self._network.cluster.topics}
        self._apply_changes(changes)
        membership.last_poll = time.monotonic()
        if changes.rejoin:
            membership.rejoin_needed = True

    async def _lead(self, response: Any, deadline: float) -> dict[str, bytes]:
        """As the group's leader: assign the partitions of every member's topics."""
        subscriptions = {}
        for member in response.members:
            subscription = decode_subscription(member.metadata)
            subscriptions[member.member_id] = Subscription(
                subscription.topics, subscription.user_data, subscription.owned_partitions,
                subscription.generation_id, subscription.rack_id, member.group_instance_id)
        topics = sorted({topic for subscription in subscriptions.values() for topic in subscription.topics})
        cluster = await self._network.refresh_metadata(
            topics, timeout_ms=max((deadline - time.monotonic()) * 1000, 1.0))
        counts = {topic: len(cluster.topics[topic].partitions) for topic in topics if topic in cluster.topics}
        assignor = next(item for item in self._assignors if item.name == response.protocol_name)
        assignments = assignor.assign(counts, subscriptions)
        return {member: encode_assignment(assignment) for member, assignment in assignments.items()}

    def _apply_changes(self, changes: Any) -> None:
        """Update what this member owns and call the listener (revoked or lost, then assigned)."""
        if changes.revoked is not None:
            self._call_listener("on_partitions_revoked", changes.revoked)
        if changes.lost is not None:
            self._call_listener("on_partitions_lost", changes.lost)
        gone = self._owned.difference(changes.owned)
        self._owned = frozenset(changes.owned)
        if gone:
            self._subscriptions.assign_from_group(self._owned)
            self._fetcher.clear_buffer()
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
        if self._rebalance is not None:
            self._rebalance.cancel()
            self._rebalance = None
        changes = changes_before_leave(self._owned, generation_reset=membership.generation_reset,
                                       rebalance_in_progress=membership.state is MemberState.REBALANCING)
        if changes.revoked and self._auto_commit:
            self._commit_quietly(changes.revoked)
        self._apply_changes(changes)
        self._thread.run(membership.leave(reason), _GRACE_SECONDS * 2)

    # -- positions --

    def _update_positions(self, deadline: float) -> None:
        missing = self._subscriptions.missing_positions()
        if missing:
            if self._group_id is not None:
                committed = self._committed(missing, max(deadline, time.monotonic() + self._default_timeout))
                for partition in missing:
                    found = committed.get(partition)
                    if found is not None and found.offset >= 0:
                        self._subscriptions.seek(partition, found.offset, found.leader_epoch)
            still = [partition for partition in missing if self._subscriptions.assignment.get(partition) is not None
                     and self._subscriptions.assignment[partition].position is None]
            if still:
                strategy = self._subscriptions.default_reset
                if strategy == "none":
                    names = ", ".join(f"{p.topic}-{p.partition}" for p in still)
                    raise KafkaException(ClientErrorCode._STATE,
                                         f"no committed offset for {names} and auto.offset.reset is none")
                self._subscriptions.request_reset(still, strategy)
        resets = self._subscriptions.awaiting_reset()
        if resets:
            specs = {partition: OffsetSpec.earliest() if strategy == "earliest" else OffsetSpec.latest()
                     for partition, strategy in resets.items()}
            found = self._list_offsets(specs, max(deadline, time.monotonic() + self._default_timeout))
            for partition, listed in found.items():
                if isinstance(listed, KafkaException):
                    raise listed
                state = self._subscriptions.assignment.get(partition)
                if state is not None and state.reset_strategy == resets[partition]:
                    self._subscriptions.seek(partition, listed.offset, listed.leader_epoch)
            self._thread.call_soon(self._fetcher.wakeup)

    def _list_offsets(self, specs: dict[TopicPartition, OffsetSpec], deadline: float) -> dict:
        isolation = IsolationLevel.READ_COMMITTED if self._isolation == READ_COMMITTED else IsolationLevel.READ_UNCOMMITTED
        return self._thread.run(self._operations.list_offsets(specs, isolation, deadline), self._remaining(deadline))

    def _committed(self, partitions: list[TopicPartition], deadline: float) -> dict[TopicPartition, Any]:
        found = self._thread.run(self._operations.list_group_offsets(
            self._group_id, partitions, self._isolation == READ_COMMITTED, deadline), self._remaining(deadline))
        result = {}
        for partition, value in found.items():
            if isinstance(value, KafkaException):
                raise value
            result[partition] = value
        return result

    @staticmethod
    def _remaining(deadline: float) -> float:
        return max(deadline - time.monotonic(), 0.001) + _GRACE_SECONDS

    def position(self, partition: tuple[str, int], timeout: float | None = None) -> int:
        """The offset of the next record poll() will return for `partition` (looked up if needed)."""
        self._enter()
        try:
            state = self._subscriptions.state(partition)
            if state.position is None:
                self._update_positions(time.monotonic() + (self._default_timeout if timeout is None else timeout))
            return self._subscriptions.state(partition).position
        finally:
            self._release()

    def seek(self, partition: tuple[str, int], offset: int | OffsetAndMetadata) -> None:
        """poll() goes on from `offset` for `partition`."""
        self._enter()
        try:
            if isinstance(offset, OffsetAndMetadata):
                offset, epoch = offset.offset, offset.leader_epoch
            else:
                epoch = None
            if offset < 0:
                raise KafkaException(ClientErrorCode._INVALID_ARG, f"seek offset must not be negative: {offset}")
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

    def paused(self) -> set[TopicPartition]:
        return {partition for partition, state in self._subscriptions.assignment.items() if state.paused}

    # -- offsets --

    def commit(self, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata] | None = None, *,
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

    def commit_async(self, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Java's commitAsync: `commit(offsets, asynchronous=True, callback=callback)`."""
        self.commit(offsets, asynchronous=True, callback=callback)

    def _offsets_to_commit(self, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata] | None
                           ) -> dict[TopicPartition, OffsetAndMetadata]:
        if self._group_id is None:
            raise KafkaException(ClientErrorCode._INVALID_ARG, "committing offsets needs group.id")
        if offsets is None:
            return {partition: OffsetAndMetadata(offset, "", epoch)
                    for partition, (offset, epoch) in self._subscriptions.consumed_offsets().items()}
        return {TopicPartition(*partition): value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
                for partition, value in offsets.items()}

    def _commit_sync(self, offsets: dict[TopicPartition, OffsetAndMetadata], timeout: float | None) -> None:
        if not offsets:
            return
        deadline = time.monotonic() + (self._default_timeout if timeout is None else timeout)
        request = {partition: (value.offset, value.leader_epoch, value.metadata) for partition, value in offsets.items()}
        try:
            self._thread.run(self._membership.commit(request, deadline,
                                                     with_generation=self._subscriptions.group_managed),
                             self._remaining(deadline))
        except TimeoutError:
            raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, "offset commit timed out") from None
        if self._interceptors:
            self._interceptors.on_commit(offsets)

    def _commit_async(self, offsets: dict[TopicPartition, OffsetAndMetadata], callback: CommitCallback | None) -> None:
        if not offsets:
            return
        deadline = time.monotonic() + self._default_timeout
        request = {partition: (value.offset, value.leader_epoch, value.metadata) for partition, value in offsets.items()}
        future = self._thread.submit(self._membership.commit(request, deadline,
                                                             with_generation=self._subscriptions.group_managed))

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

    def _maybe_auto_commit(self) -> None:
        if not self._auto_commit or time.monotonic() < self._next_auto_commit:
            return
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        if self._membership is not None and self._subscriptions.group_managed \
                and (self._rebalance is not None or self._membership.state is not MemberState.STABLE):
            return
        self._commit_async(self._offsets_to_commit(None), None)

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
            wanted = [TopicPartition(*partition) for partition in partitions]
            found = self._committed(wanted, time.monotonic() + (self._default_timeout if timeout is None else timeout))
            return {partition: found[partition] if partition in found and found[partition].offset >= 0 else None
                    for partition in wanted}
        finally:
            self._release()

    def offsets_for_times(self, timestamps: Mapping[tuple[str, int], int], timeout: float | None = None
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
            found = self._list_offsets(specs, deadline)
            result: dict[TopicPartition, Any] = {}
            for partition, listed in found.items():
                if isinstance(listed, KafkaException):
                    raise listed
                if with_timestamps:
                    result[partition] = None if listed.offset < 0 else OffsetAndTimestamp(
                        listed.offset, listed.timestamp, listed.leader_epoch)
                else:
                    result[partition] = listed.offset
            return result
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

    def __repr__(self) -> str:
        return f"<Consumer {self.client_id}{' closed' if self._closed else ''}>"
