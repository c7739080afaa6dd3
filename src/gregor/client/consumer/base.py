"""What the synchronous and the asyncio consumer share: configuration, the subscription, the
fetcher and group membership objects, and every step of a poll that is not waiting.

The rebalance protocol (JoinGroup, the leader's assignment, SyncGroup), finding positions
(committed offsets, else `auto.offset.reset`) and commits are coroutines here: the sync
`Consumer` runs them on its network thread, `gregor.aio.Consumer` awaits them on the caller's
loop. The bookkeeping between them (what the member owns, which listener calls a rebalance
makes, what to commit) is plain code. Calling the rebalance listener and waiting stay with the
subclasses, since only they know whether a listener method is a coroutine and how to wait.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from gregor.client.admin import AdminOperations, IsolationLevel, OffsetAndMetadata, OffsetSpec
from gregor.client.assignors import (
    ASSIGNORS, Assignment, PartitionAssignor, RebalanceChanges, RebalanceProtocol, Subscription,
    changes_before_join, changes_before_leave, changes_on_assignment, decode_assignment, decode_subscription,
    encode_assignment, encode_subscription,
)
from gregor.client.config import ConfigError, Role, parse_config
from gregor.client.consumer.consumer_group import ConsumerGroupMember
from gregor.client.consumer.consumer_membership import ConsumerMembership, Reconciliation
from gregor.client.consumer.coordinator import GroupMembership, MemberState
from gregor.client.consumer.fetcher import READ_COMMITTED, READ_UNCOMMITTED, FetchSettings, Fetcher
from gregor.client.consumer.subscription import SubscriptionState, SubscriptionType
from gregor.client.errors import ClientErrorCode, IllegalStateError, KafkaException
from gregor.client.group_metadata import ConsumerGroupMetadata
from gregor.client.interceptors import ConsumerInterceptors, resolve_consumer_interceptors
from gregor.client.network import ByPartition, NetworkClient, NetworkSettings, TopicPartition
from gregor.client.serialization import resolve_deserializer
from gregor.protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

_CLIENT_NUMBERS = itertools.count(1)
AUTO_CREATE_TIMEOUT_MS = 4000  # the metadata refresher retries after it
_RETRIES_UNTIL_DEADLINE = 2**31 - 1  # offset lookups retry until default.api.timeout.ms, as Java's do


@dataclass(frozen=True)
class OffsetAndTimestamp:
    offset: int
    timestamp: int
    leader_epoch: int | None = None


class ConsumerBase:
    """The state of a consumer and the steps of its poll, without threads or waiting."""

    def __init__(self, config: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> None:
        parsed = parse_config(Role.CONSUMER, config, **kwargs)
        consumer_protocol = parsed["group.protocol"].lower() == "consumer"
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
        self._assignors = [_make_assignor(item) for item in parsed["partition.assignment.strategy"]]
        protocols = {protocol for assignor in self._assignors for protocol in assignor.supported_protocols}
        self._protocol = RebalanceProtocol.COOPERATIVE if all(
            RebalanceProtocol.COOPERATIVE in assignor.supported_protocols for assignor in self._assignors) \
            and RebalanceProtocol.COOPERATIVE in protocols else RebalanceProtocol.EAGER
        self._interceptors: ConsumerInterceptors = resolve_consumer_interceptors(parsed["interceptor.classes"])
        self._subscriptions = SubscriptionState(default_reset=parsed["auto.offset.reset"])
        self._owned: frozenset[TopicPartition] = frozenset()
        self._joined_partition_counts: dict[str, int] = {}
        self._pending_error: KafkaException | None = None
        self._closed = False
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
        self._member = ConsumerGroupMember(self._network, ConsumerMembership(
            self._group_id, instance_id=parsed["group.instance.id"], rack_id=parsed["client.rack"] or None,
            rebalance_timeout_ms=parsed["max.poll.interval.ms"], server_assignor=parsed["group.remote.assignor"],
            retry_backoff_ms=parsed["retry.backoff.ms"])) if consumer_protocol and self._group_id is not None else None

    # -- subscriptions --

    def _subscribe(self, topics: Iterable[str] | str | re.Pattern) -> bool:
        """Record a subscription; True when it is a pattern (whose topics come from metadata)."""
        if self._membership is None:
            raise KafkaException(ClientErrorCode._INVALID_ARG,
                                 "subscribe() needs group.id; use assign() to read without a group")
        if isinstance(topics, str) and topics.startswith("^"):
            topics = re.compile(topics)
        if isinstance(topics, re.Pattern):
            self._subscriptions.subscribe_pattern(topics)
            self._network.cluster.want_all_topics = True
            return True
        if not isinstance(topics, (str, Iterable)):
            raise TypeError(f"topics must be a topic name, an iterable of names or a pattern, "
                            f"not {type(topics).__name__}")
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or any(not isinstance(name, str) or not name.strip() for name in names):
            raise KafkaException(ClientErrorCode._INVALID_ARG, f"topic names must be non-empty: {names!r}")
        if self._subscriptions.subscribe(names) and self._member is None:
            self._membership.rejoin_needed = True
        return False

    def _member_subscription(self) -> tuple[tuple[str, ...] | None, str | None]:
        """What a KIP-848 member tells the coordinator: topic names, or the pattern (matched by
        the broker, as librdkafka's consumer protocol does)."""
        pattern = self._subscriptions.pattern
        if self._subscriptions.kind is SubscriptionType.AUTO_PATTERN and pattern is not None:
            return None, pattern.pattern
        return tuple(sorted(self._subscriptions.topics)), None

    def _match_pattern(self) -> None:
        """Subscribe to the topics of the cluster metadata that the pattern matches."""
        cluster = self._network.cluster
        pattern = self._subscriptions.pattern
        matched = [name for name, metadata in cluster.topics.items()
                   if pattern.fullmatch(name) and not (metadata.is_internal and self._exclude_internal)]
        if self._subscriptions.set_topics(matched) and self._membership is not None and self._member is None:
            self._membership.rejoin_needed = True

    async def _want_topics(self, topics: Iterable[str]) -> None:
        """Have metadata kept for `topics`, creating them first where auto creation is on."""
        topics = list(topics)
        cluster = self._network.cluster
        cluster.wanted_topics.update(topics)
        if self._config["allow.auto.create.topics"] and any(topic not in cluster.topics for topic in topics):
            try:
                await self._network.refresh_metadata(sorted(cluster.wanted_topics), allow_auto_topic_creation=True,
                                                     timeout_ms=AUTO_CREATE_TIMEOUT_MS)
                return
            except KafkaException as error:
                log.debug("metadata request creating %s failed: %s", topics, error)
        self._network.request_metadata_update()

    def _check_subscribed(self) -> None:
        if self._subscriptions.kind is SubscriptionType.NONE:
            raise KafkaException(ClientErrorCode._STATE, "consumer is not subscribed to any topics or "
                                                         "assigned any partitions")

    # -- the group --

    def _group_changed(self) -> None:
        """Before a poll's rebalance step: raise a fatal membership error, follow the pattern, and
        ask to rejoin when a subscribed topic's partition count changed."""
        membership = self._membership
        if membership.fatal is not None:
            raise membership.fatal
        if self._subscriptions.kind is SubscriptionType.AUTO_PATTERN:
            self._match_pattern()
        elif self._joined_partition_counts:
            topics = self._network.cluster.topics
            if any(topic in topics and len(topics[topic].partitions) != count
                   for topic, count in self._joined_partition_counts.items()):
                membership.rejoin_needed = True

    def _changes_before_join(self) -> RebalanceChanges:
        membership = self._membership
        return changes_before_join(self._protocol, self._owned, self._subscriptions.topics,
                                   generation_reset=membership.generation_reset)

    def _changes_before_leave(self) -> RebalanceChanges:
        membership = self._membership
        return changes_before_leave(self._owned, generation_reset=membership.generation_reset,
                                    rebalance_in_progress=membership.state is MemberState.REBALANCING)

    def _join_protocols(self) -> list[tuple[str, bytes]]:
        """This member's subscription, encoded for each assignor."""
        membership = self._membership
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

    def _assignment_changes(self, data: bytes) -> RebalanceChanges:
        """Take the assignment SyncGroup gave: the subscription follows it; the changes returned
        are for `_own` and the listener."""
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
        membership.last_poll = time.monotonic()
        return changes

    def _own(self, changes: RebalanceChanges) -> None:
        """What the member owns after `changes` (called between the revoked/lost and the
        assigned listener calls, so that the listener may seek); records of partitions it gave up
        are dropped."""
        gone = self._owned.difference(changes.owned)
        changed = self._owned != changes.owned
        self._owned = frozenset(changes.owned)
        if changed:
            self._subscriptions.assign_from_group(self._owned)
        if gone:
            self._fetcher.clear_buffer()

    # -- the consumer protocol (KIP-848) --

    def _note_poll(self) -> None:
        """The application polled (a member that stops polling leaves after max.poll.interval.ms)."""
        if self._membership is not None:
            self._membership.last_poll = time.monotonic()
        if self._member is not None:
            self._member.last_poll = time.monotonic()

    def _member_out_of_group(self) -> RebalanceChanges | None:
        """The lost partitions to report when the member was fenced or timed out of the group
        (before it rejoins), else None; raises the member's fatal error."""
        member = self._member
        if member.fatal is not None:
            raise member.fatal
        if not (member.membership.fenced or member.poll_timeout_expired):
            return None
        log.info("group %s: member %s is out of the group; it loses %s and rejoins", member.group_id,
                 member.membership.member_id, ", ".join(f"{p.topic}-{p.partition}" for p in sorted(self._owned))
                 or "nothing")
        return RebalanceChanges(owned=frozenset(), lost=tuple(sorted(self._owned)) or None)

    def _member_changes(self, step: Reconciliation) -> RebalanceChanges:
        """The listener calls of one reconciliation step: revoked (if any), then assigned."""
        log.info("group %s epoch %d: member %s revokes %s, is assigned %s", self._group_id, step.epoch,
                 self._member.membership.member_id,
                 ", ".join(f"{p.topic}-{p.partition}" for p in sorted(step.revoked)) or "nothing",
                 ", ".join(f"{p.topic}-{p.partition}" for p in sorted(step.assigned)) or "nothing")
        return RebalanceChanges(owned=step.target, revoked=tuple(sorted(step.revoked)) or None,
                                assigned=tuple(sorted(step.assigned)))

    def _member_leaving(self) -> RebalanceChanges:
        return RebalanceChanges(owned=frozenset(), revoked=tuple(sorted(self._owned)) or None)

    def _after_assignment(self, changes: RebalanceChanges) -> None:
        if changes.rejoin:
            self._membership.rejoin_needed = True

    def _rebalance_needed(self) -> bool:
        membership = self._membership
        return membership.rejoin_needed or membership.state is not MemberState.STABLE

    def _auto_commit_due(self, rebalancing: bool) -> bool:
        """Whether an automatic commit is due now (it is skipped while the group rebalances)."""
        if not self._auto_commit or time.monotonic() < self._next_auto_commit:
            return False
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        if self._member is not None and self._subscriptions.group_managed:
            return self._member.membership.can_commit
        return not (self._membership is not None and self._subscriptions.group_managed
                    and (rebalancing or self._membership.state is not MemberState.STABLE))

    # -- positions and offsets --

    async def _update_positions(self, deadline: float) -> None:
        """Positions for the partitions that have none: the committed offset (with a group), else
        `auto.offset.reset`, looked up with ListOffsets."""
        subscriptions = self._subscriptions
        missing = subscriptions.missing_positions()
        if missing:
            if self._group_id is not None:
                committed = await self._committed(missing, max(deadline, time.monotonic() + self._default_timeout))
                for partition in missing:
                    found = committed.get(partition)
                    if found is not None and found.offset >= 0:
                        subscriptions.seek(partition, found.offset, found.leader_epoch)
            still = [partition for partition in missing if subscriptions.assignment.get(partition) is not None
                     and subscriptions.assignment[partition].position is None]
            if still:
                strategy = subscriptions.default_reset
                if strategy == "none":
                    names = ", ".join(f"{p.topic}-{p.partition}" for p in still)
                    raise KafkaException(ClientErrorCode._STATE,
                                         f"no committed offset for {names} and auto.offset.reset is none")
                subscriptions.request_reset(still, strategy)
        resets = subscriptions.awaiting_reset()
        if resets:
            specs = {partition: OffsetSpec.earliest() if strategy == "earliest" else OffsetSpec.latest()
                     for partition, strategy in resets.items()}
            found = await self._list_offsets(specs, max(deadline, time.monotonic() + self._default_timeout))
            for partition, listed in found.items():
                if isinstance(listed, KafkaException):
                    raise listed
                state = subscriptions.assignment.get(partition)
                if state is not None and state.reset_strategy == resets[partition]:
                    subscriptions.seek(partition, listed.offset, listed.leader_epoch)
            self._fetcher.wakeup()

    def _positions_known(self) -> bool:
        return not self._subscriptions.missing_positions() and not self._subscriptions.awaiting_reset()

    async def _list_offsets(self, specs: dict[TopicPartition, OffsetSpec], deadline: float) -> dict:
        isolation = IsolationLevel.READ_COMMITTED if self._isolation == READ_COMMITTED else IsolationLevel.READ_UNCOMMITTED
        return await self._operations.list_offsets(specs, isolation, deadline)

    async def _committed(self, partitions: list[TopicPartition], deadline: float) -> dict[TopicPartition, Any]:
        while True:
            member = None
            if self._member is not None and self._subscriptions.group_managed and self._member.membership.can_commit:
                member = (self._member.membership.member_id, self._member.membership.member_epoch)
            try:
                found = await self._operations.list_group_offsets(
                    self._group_id, partitions, self._isolation == READ_COMMITTED, deadline, member=member)
                break
            except KafkaException as error:
                # A heartbeat bumped the member's epoch meanwhile: ask again with the new one, as Java does.
                if error.code != ErrorCode.STALE_MEMBER_EPOCH or time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(self._network.settings.retry_backoff_ms / 1000)
        result = {}
        for partition, value in found.items():
            if isinstance(value, KafkaException):
                raise value
            result[partition] = value
        return result

    def _offsets_to_commit(self, offsets: ByPartition[int | OffsetAndMetadata] | None
                           ) -> dict[TopicPartition, OffsetAndMetadata]:
        if self._group_id is None:
            raise KafkaException(ClientErrorCode._INVALID_ARG, "committing offsets needs group.id")
        if offsets is None:
            return {partition: OffsetAndMetadata(offset, "", epoch)
                    for partition, (offset, epoch) in self._subscriptions.consumed_offsets().items()}
        if not isinstance(offsets, Mapping):
            raise TypeError(f"offsets must be a mapping of (topic, partition) to offsets, not {type(offsets).__name__}")
        return {TopicPartition(*partition): value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
                for partition, value in offsets.items()}

    async def _commit(self, offsets: dict[TopicPartition, OffsetAndMetadata], deadline: float) -> None:
        request = {partition: (value.offset, value.leader_epoch, value.metadata) for partition, value in offsets.items()}
        if self._member is not None and self._subscriptions.group_managed:
            await self._member.commit(request, deadline)
            return
        await self._membership.commit(request, deadline, with_generation=self._subscriptions.group_managed)

    def _seek_target(self, offset: int | OffsetAndMetadata) -> tuple[int, int | None]:
        if isinstance(offset, OffsetAndMetadata):
            offset, epoch = offset.offset, offset.leader_epoch
        else:
            epoch = None
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise TypeError(f"offset must be an int or an OffsetAndMetadata, not {type(offset).__name__}")
        if offset < 0:
            raise KafkaException(ClientErrorCode._INVALID_ARG, f"seek offset must not be negative: {offset}")
        return offset, epoch

    @staticmethod
    def _listed_result(found: Mapping[TopicPartition, Any], with_timestamps: bool) -> dict[TopicPartition, Any]:
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

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group id, generation, member id and group instance id for a transactional
        producer's `send_offsets_to_transaction` (Java's Consumer.groupMetadata()); raises
        IllegalStateError without a `group.id`."""
        if self._membership is None:
            raise IllegalStateError(ClientErrorCode._STATE,
                                    "group_metadata() needs a consumer with a group.id")
        membership = self._membership
        return ConsumerGroupMetadata(membership.group_id, membership.generation, membership.member_id,
                                     membership.instance_id)

    def assignment(self) -> set[TopicPartition]:
        return set(self._subscriptions.assignment)

    def subscription(self) -> set[str]:
        return set(self._subscriptions.topics) if self._subscriptions.group_managed else set()

    def paused(self) -> set[TopicPartition]:
        return {partition for partition, state in self._subscriptions.assignment.items() if state.paused}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.client_id}{' closed' if self._closed else ''}>"


def _make_assignor(item: Any) -> PartitionAssignor:
    if isinstance(item, str):
        if item not in ASSIGNORS:
            raise ConfigError(f"partition.assignment.strategy: unknown assignor {item!r}; "
                              f"built in: {', '.join(sorted(ASSIGNORS))}")
        return ASSIGNORS[item]()
    return item() if isinstance(item, type) else item


def partitions_arg(partitions: Iterable[tuple[str, int]], name: str = "partitions") -> list[TopicPartition]:
    """(topic, partition) pairs as TopicPartitions; anything else is a TypeError naming `name`."""
    if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Iterable):
        raise TypeError(f"{name} must be an iterable of (topic, partition) pairs, not {type(partitions).__name__}")
    out = []
    for item in partitions:
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[0], str) \
                or not isinstance(item[1], int) or isinstance(item[1], bool):
            raise TypeError(f"{name} must hold (topic, partition) pairs, not {item!r}")
        out.append(TopicPartition(*item))
    return out
