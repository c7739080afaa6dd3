"""A KIP-848 consumer group member's I/O (`group.protocol=consumer`), on the network loop.

The state machine is `consumer_membership.ConsumerMembership`; this class sends its heartbeats
when they are due (at the coordinator's interval, or at once after a subscription change, a
reconciliation or an error's backoff), commits offsets with the member's id and epoch, and leaves.
The application's side of a rebalance (commit, listener, positions) is the consumer's: it takes
a `Reconciliation` step with `next_step` and hands it back with `step_done`, both on this loop.

As Java's consumer, a member whose application has not polled within `max.poll.interval.ms`
leaves the group (its partitions move at once); the next poll reports them lost and rejoins.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Mapping

from gregor.client.consumer.consumer_membership import IN_GROUP, ConsumerMembership, MemberState, Reconciliation
from gregor.client.consumer.coordinator import OFFSET_COMMIT_VERSIONS
from gregor.client.consumer.heartbeat_member import HeartbeatMember
from gregor.client.errors import ClientErrorCode, KafkaException, error_for
from gregor.client.network import NetworkClient, TopicPartition
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import OffsetCommitRequest

log = logging.getLogger(__name__)

CONSUMER_GROUP_HEARTBEAT_VERSIONS = (0, 1)
_COMMIT_FENCED = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH})


class ConsumerGroupMember(HeartbeatMember):
    """The heartbeat task, commits and leaving for one `ConsumerMembership`."""

    in_group = IN_GROUP

    def __init__(self, network: NetworkClient, membership: ConsumerMembership) -> None:
        super().__init__(network, membership.group_id)
        self.membership: ConsumerMembership = membership
        self.last_poll = time.monotonic()
        self.poll_timeout_expired = False
        self.on_change: Callable[[], None] | None = None
        """Called when the application has something to do (a new target, a fencing)."""

    @property
    def fatal(self) -> KafkaException | None:
        return self.membership.fatal

    # -- the application's steps (run on the network loop) --

    async def subscribe(self, topics: tuple[str, ...] | None, regex: str | None) -> None:
        self.membership.subscribe(topics, regex, time.monotonic())
        self.wake()

    async def next_step(self) -> Reconciliation | None:
        """The reconciliation to run now, with target topic ids named from metadata (a refresh is
        asked for when some are unknown)."""
        names = {metadata.topic_id: name for name, metadata in self.network.cluster.topics.items()
                 if metadata.topic_id is not None}
        step = self.membership.reconciliation(names)
        if self.membership.unresolved:
            self.network.request_metadata_update()
        return step

    async def step_done(self, step: Reconciliation) -> None:
        self.membership.reconciled(step, time.monotonic())
        self.wake()

    async def rejoin(self) -> None:
        """After a fencing (or a poll timeout) was reported to the application: join again (a
        leave still in flight is waited out by the next poll)."""
        membership = self.membership
        if membership.fenced:
            membership.rejoin(time.monotonic())
        elif membership.state is MemberState.UNSUBSCRIBED and (membership.topics or membership.regex):
            membership.subscribe(membership.topics, membership.regex, time.monotonic())
        else:
            return
        self.poll_timeout_expired = False
        self.wake()

    async def leave(self, reason: str, timeout: float = 5.0) -> None:
        """Leave with the next heartbeat and wait (at most `timeout`) for the coordinator's answer."""
        membership = self.membership
        log.info("consumer of group %s leaves: %s", self.group_id, reason)
        if membership.leave(time.monotonic()):
            await self._wait_while_leaving(MemberState.LEAVING, timeout)
        membership.unsubscribed()

    # -- commits --

    async def commit(self, offsets: Mapping[TopicPartition, tuple[int, int | None, str]], deadline: float) -> None:
        """OffsetCommit with the member's id and epoch, retried on retriable errors and on
        STALE_MEMBER_EPOCH (with the epoch the latest heartbeat gave) until `deadline`."""
        membership = self.membership
        if not membership.can_commit:
            raise KafkaException(ErrorCode.UNKNOWN_MEMBER_ID, f"commit cannot be completed: this consumer is not "
                                 f"a member of group {self.group_id!r} now; poll again to rejoin")
        by_topic: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for partition, (offset, epoch, metadata) in offsets.items():
            by_topic.setdefault(partition.topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=partition.partition, committed_offset=offset,
                committed_leader_epoch=-1 if epoch is None else epoch, committed_metadata=metadata))
        while True:
            request = OffsetCommitRequest(
                group_id=self.group_id, generation_id_or_member_epoch=membership.member_epoch,
                member_id=membership.member_id, group_instance_id=membership.instance_id, retention_time_ms=-1,
                topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=partitions)
                        for topic, partitions in by_topic.items()])
            try:
                response = await self._send(request, OFFSET_COMMIT_VERSIONS, deadline)
            except KafkaException as error:
                if not error.retriable or error.code == ClientErrorCode._DESTROY or time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)
                continue
            codes = {partition.error_code for topic in response.topics for partition in topic.partitions}
            codes.discard(ErrorCode.NONE)
            if not codes:
                return
            code = min(codes)
            self._check_moved(code)
            if code in _COMMIT_FENCED:
                raise KafkaException(code, "commit cannot be completed: this member was fenced from group "
                                           f"{self.group_id!r} and its partitions may belong to another member")
            failure = error_for(code, f"OffsetCommit of group {self.group_id!r}")
            if code != ErrorCode.STALE_MEMBER_EPOCH and not failure.retriable or time.monotonic() >= deadline:
                raise failure
            await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)

    # -- the heartbeat task --

    def _before_heartbeat(self, now: float) -> None:
        """Java's max.poll.interval.ms: an application that stopped polling gives its partitions up."""
        membership = self.membership
        if membership.state in (MemberState.STABLE, MemberState.RECONCILING, MemberState.ACKNOWLEDGING) \
                and now - self.last_poll > membership.rebalance_timeout_ms / 1000:
            log.warning("consumer of group %s did not poll within max.poll.interval.ms (%d ms); leaving the "
                        "group so its partitions can move (the next poll rejoins)",
                        self.group_id, membership.rebalance_timeout_ms)
            self.poll_timeout_expired = True
            membership.leave(now)
            if self.on_change is not None:
                self.on_change()

    async def _heartbeat_once(self) -> None:
        membership = self.membership
        request = membership.heartbeat(time.monotonic())
        try:
            response = await self._send(request, CONSUMER_GROUP_HEARTBEAT_VERSIONS,
                                        time.monotonic() + self.network.settings.request_timeout_ms / 1000)
        except KafkaException as error:
            if error.code == ClientErrorCode._DESTROY:
                membership.on_failure(time.monotonic())
                raise
            log.debug("ConsumerGroupHeartbeat of %s failed: %s", self.group_id, error)
            self.coordinators.invalidate(self.group_id)
            membership.on_failure(time.monotonic())
            return
        code = response.error_code
        self._check_moved(code)
        before = membership.state
        membership.on_response(response, time.monotonic())
        log.debug("ConsumerGroupHeartbeat of %s (epoch %d) answered %s: %s -> %s", self.group_id,
                  request.member_epoch, error_for(code).name if code else "NONE", before.value,
                  membership.state.value)
        if membership.fatal is not None:
            log.error("consumer of group %s: %s", self.group_id, membership.fatal)
        if self.on_change is not None and (membership.fatal is not None or membership.fenced
                                           or membership.state is MemberState.RECONCILING):
            self.on_change()
