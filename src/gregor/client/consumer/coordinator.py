"""Group membership (the classic protocol) on the network thread: finding the coordinator,
JoinGroup / SyncGroup, the background heartbeat, LeaveGroup and offset commits.

The application thread drives a rebalance step by step (it must run the rebalance listener
between the steps, as Java's consumer does inside poll); this class holds the member's
identity and does the requests. The heartbeat task runs while the member is stable; it turns
the coordinator's answers into `rejoin_needed` / `generation_reset`, and leaves the group when
the application has not polled within `max.poll.interval.ms`, as Java's heartbeat thread does.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from typing import Any, Mapping

from gregor.client.errors import ClientErrorCode, KafkaConnectionError, KafkaException, error_for
from gregor.client.network import COORDINATOR_MOVED_ERRORS, Coordinators, NetworkClient, TopicPartition
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest, SyncGroupRequest,
)

log = logging.getLogger(__name__)

JOIN_GROUP_VERSIONS = (1, 9)
SYNC_GROUP_VERSIONS = (0, 5)
HEARTBEAT_VERSIONS = (0, 4)
LEAVE_GROUP_VERSIONS = (0, 5)
OFFSET_COMMIT_VERSIONS = (2, 9)
PROTOCOL_TYPE = "consumer"

_RESET_MEMBER = frozenset({ErrorCode.UNKNOWN_MEMBER_ID})
_RESET_GENERATION = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID})


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    REBALANCING = "rebalancing"
    STABLE = "stable"


class CoordinatorLink:
    """Requests to a group's coordinator, found (and found again when it moved) on the way."""

    def __init__(self, network: NetworkClient, group_id: str) -> None:
        self.network = network
        self.coordinators = Coordinators(network)
        self.group_id = group_id

    async def coordinator(self, deadline: float) -> int:
        """The group's coordinator, asked again while the brokers answer with a retriable error
        (COORDINATOR_NOT_AVAILABLE while a new cluster creates __consumer_offsets) until
        `deadline`, as Java's ensureCoordinatorReady does; a failure to reach a broker raises."""
        while True:
            try:
                return await self.coordinators.find(self.group_id, timeout_ms=self._remaining_ms(deadline))
            except KafkaException as error:
                if error.code <= 0 or not error.retriable or time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)

    async def _send(self, request: Any, versions: tuple[int, int], deadline: float,
                    timeout_ms: float | None = None) -> Any:
        node = await self.coordinator(deadline)
        try:
            return await self.network.send(request, node, versions=versions,
                                           timeout_ms=timeout_ms or self._remaining_ms(deadline))
        except KafkaConnectionError:
            self.coordinators.invalidate(self.group_id)
            raise

    def _check_moved(self, code: int) -> None:
        if code in COORDINATOR_MOVED_ERRORS:
            self.coordinators.invalidate(self.group_id)

    @staticmethod
    def _remaining_ms(deadline: float) -> float:
        return max((deadline - time.monotonic()) * 1000, 1.0)


class GroupMembership(CoordinatorLink):
    def __init__(self, network: NetworkClient, group_id: str, instance_id: str | None, *,
                 session_timeout_ms: int, rebalance_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        super().__init__(network, group_id)
        self.instance_id = instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.member_id = ""
        self.generation = -1
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.generation_reset = False
        self.fatal: KafkaException | None = None
        self.last_poll = time.monotonic()
        self.poll_timeout_expired = False
        self._heartbeat_wakeup: asyncio.Event | None = None

    async def join(self, protocols: list[tuple[str, bytes]], deadline: float) -> Any:
        """JoinGroup until the coordinator answers with a generation (retrying the member-id
        handshake and retriable errors); fatal errors raise."""
        self.state = MemberState.REBALANCING
        while True:
            request = JoinGroupRequest(
                group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.member_id,
                group_instance_id=self.instance_id, protocol_type=PROTOCOL_TYPE,
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata)
                           for name, metadata in protocols], reason=None)
            response = await self._send(request, JOIN_GROUP_VERSIONS, deadline,
                                        timeout_ms=max(self._remaining_ms(deadline), self.rebalance_timeout_ms + 5000))
            code = response.error_code
            log.debug("JoinGroup of %s answered %s (generation %d, member %r)", self.group_id,
                      error_for(code).name if code else "NONE", response.generation_id, response.member_id)
            if code == ErrorCode.NONE:
                self.member_id = response.member_id
                self.generation = response.generation_id
                self.protocol_name = response.protocol_name
                self.leader_id = response.leader
                self.generation_reset = False
                return response
            if code == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = response.member_id
                continue
            if code in _RESET_MEMBER:
                self.member_id = ""
                continue
            self._check_moved(code)
            error = error_for(code, f"JoinGroup of group {self.group_id!r}")
            if not error.retriable and code not in (ErrorCode.REBALANCE_IN_PROGRESS,):
                self.state = MemberState.UNJOINED
                if code == ErrorCode.FENCED_INSTANCE_ID:
                    self.fatal = error
                raise error
            if time.monotonic() >= deadline:
                raise error
            await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)

    async def sync(self, assignments: Mapping[str, bytes], deadline: float) -> bytes | None:
        """SyncGroup: this member's assignment bytes, or None when it must rejoin."""
        request = SyncGroupRequest(
            group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=self.instance_id, protocol_type=PROTOCOL_TYPE, protocol_name=self.protocol_name,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=data)
                         for member, data in assignments.items()])
        response = await self._send(request, SYNC_GROUP_VERSIONS, deadline,
                                    timeout_ms=max(self._remaining_ms(deadline), self.rebalance_timeout_ms + 5000))
        code = response.error_code
        log.debug("SyncGroup of %s answered %s (generation %d, member %r, %d assignment bytes)", self.group_id,
                  error_for(code).name if code else "NONE", self.generation, self.member_id,
                  len(response.assignment or b""))
        if code == ErrorCode.NONE:
            self.state = MemberState.STABLE
            self.rejoin_needed = False
            self.poll_timeout_expired = False
            self._wake_heartbeat()
            return response.assignment
        self._check_moved(code)
        self._note_membership_error(code)
        if code == ErrorCode.FENCED_INSTANCE_ID:
            self.fatal = error_for(code, f"SyncGroup of group {self.group_id!r}")
            raise self.fatal
        return None

    async def leave(self, reason: str) -> None:
        """LeaveGroup (dynamic members only; a static member keeps its place until its session ends)."""
        if self.member_id and self.instance_id is None:
            request = LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id, members=[
                LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=None, reason=reason)])
            try:
                await self._send(request, LEAVE_GROUP_VERSIONS, time.monotonic() + 5)
            except KafkaException as error:
                log.info("LeaveGroup of %s failed: %s", self.group_id, error)
        self.reset_generation(forget_member=True)

    def reset_generation(self, *, forget_member: bool) -> None:
        self.generation = -1
        if forget_member:
            self.member_id = ""
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.generation_reset = True

    def _note_membership_error(self, code: int) -> None:
        if code in _RESET_GENERATION:
            self.reset_generation(forget_member=code in _RESET_MEMBER)
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.rejoin_needed = True

    async def commit(self, offsets: Mapping[TopicPartition, tuple[int, int | None, str]], deadline: float,
                     *, with_generation: bool = True) -> None:
        """OffsetCommit, retried on retriable errors until `deadline`."""
        by_topic: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for partition, (offset, epoch, metadata) in offsets.items():
            by_topic.setdefault(partition.topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=partition.partition, committed_offset=offset,
                committed_leader_epoch=-1 if epoch is None else epoch, committed_metadata=metadata))
        if with_generation and self.state is not MemberState.STABLE:
            # As Java's consumer: a member outside an active generation must not commit as a
            # standalone client (its partitions may already belong to another member).
            code = ErrorCode.REBALANCE_IN_PROGRESS if self.state is MemberState.REBALANCING \
                else ErrorCode.UNKNOWN_MEMBER_ID
            raise KafkaException(code, f"commit cannot be completed: this consumer is not part of an active "
                                       f"generation of group {self.group_id!r}; poll again to rejoin")
        stable = with_generation
        while True:
            request = OffsetCommitRequest(
                group_id=self.group_id, generation_id_or_member_epoch=self.generation if stable else -1,
                member_id=self.member_id if stable else "", group_instance_id=self.instance_id if stable else None,
                retention_time_ms=-1,
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
            if code in _RESET_GENERATION or code == ErrorCode.REBALANCE_IN_PROGRESS:
                self._note_membership_error(code)
                raise KafkaException(code, "commit cannot be completed: the group has rebalanced and the "
                                           "partitions may now belong to another member; poll again to rejoin")
            error = error_for(code, f"OffsetCommit of group {self.group_id!r}")
            if not error.retriable or time.monotonic() >= deadline:
                raise error
            await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)

    # -- the heartbeat task --

    def _wake_heartbeat(self) -> None:
        if self._heartbeat_wakeup is not None:
            self._heartbeat_wakeup.set()

    async def heartbeat_loop(self) -> None:
        self._heartbeat_wakeup = asyncio.Event()
        last_success = time.monotonic()
        while True:
            try:
                async with asyncio.timeout(self.heartbeat_interval_ms / 1000):
                    await self._heartbeat_wakeup.wait()
            except TimeoutError:
                pass
            self._heartbeat_wakeup.clear()
            if self.state is not MemberState.STABLE:
                last_success = time.monotonic()
                continue
            if time.monotonic() - self.last_poll > self.rebalance_timeout_ms / 1000:
                log.warning("consumer of group %s did not poll within max.poll.interval.ms (%d ms); leaving the "
                            "group so its partitions can move (the next poll rejoins)",
                            self.group_id, self.rebalance_timeout_ms)
                self.poll_timeout_expired = True
                await self.leave("consumer poll timeout has expired")
                continue
            request = HeartbeatRequest(group_id=self.group_id, generation_id=self.generation,
                                       member_id=self.member_id, group_instance_id=self.instance_id)
            try:
                response = await self._send(request, HEARTBEAT_VERSIONS, time.monotonic() + self.session_timeout_ms / 1000,
                                            timeout_ms=min(self.session_timeout_ms, 30_000))
            except KafkaException as error:
                if error.code == ClientErrorCode._DESTROY:
                    return
                log.debug("heartbeat of %s failed: %s", self.group_id, error)
                if time.monotonic() - last_success > self.session_timeout_ms / 1000:
                    self.coordinators.invalidate(self.group_id)
                continue
            code = response.error_code
            if code == ErrorCode.NONE:
                last_success = time.monotonic()
                continue
            self._check_moved(code)
            self._note_membership_error(code)
            if code == ErrorCode.FENCED_INSTANCE_ID:
                self.fatal = error_for(code, f"group {self.group_id!r}: another consumer uses this group.instance.id")
                self.state = MemberState.UNJOINED
