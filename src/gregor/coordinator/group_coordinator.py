"""The classic group coordinator (Kafka 3.x GroupCoordinator), fed events, returning effects.

The broker owns the sockets, the clock and `__consumer_offsets`. For each request it calls one
method below with the decoded fields and `now_ms`:

- JoinGroup, SyncGroup and OffsetCommit may have to wait (for other members, for the leader's
  assignment, for a write). They take the broker's `token` for the request (any object but
  None) and return effects; the answer is a `Respond(token, ...)` among them or among the
  effects of a later call (`tick`, `append_done`, another member's request). Every token is
  answered exactly once.
- The other requests are answered at once (with effects where they write or wake others).
- `AppendRecords` effects are batches for `__consumer_offsets`; those with an `append_id` must
  be reported back through `append_done` once committed or failed.
- `tick(now_ms)` fires due timers (sessions, rebalance and sync timeouts, the initial rebalance
  delay, offset expiration); `next_deadline()` says when the next one is due.
- `begin_load` / `load_partition` / `unload_partition` follow the broker's leadership of
  `__consumer_offsets` partitions; requests for groups elsewhere get NOT_COORDINATOR.
- TxnOffsetCommit's offsets stay pending per producer (`txn_offsets`) until
  `complete_transaction` reports the transaction's marker on their partition.

Member ids are `<client id or group instance id>-<uuid4>`, the uuid drawn from the injected
`random.Random`, so a seeded coordinator is deterministic.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from typing import Callable, Iterable, Mapping, Sequence

from gregor.coordinator.config import GroupCoordinatorConfig
from gregor.coordinator.consumer import describe as consumer_describe
from gregor.coordinator.consumer import offsets as consumer_offsets
from gregor.coordinator.consumer.group import ConsumerGroup, TopicInfo
from gregor.coordinator.consumer.classic_members import ClassicMembers
from gregor.coordinator.consumer.heartbeat import ConsumerGroups, HeartbeatError, HeartbeatRequest
from gregor.coordinator.consumer.migration import CannotUpgrade, downgrade, upgrade
from gregor.coordinator.consumer.records import group_tombstones as consumer_group_tombstones
from gregor.coordinator.consumer.results import ConsumerGroupDescription
from gregor.coordinator.effects import Effect, Record, Respond
from gregor.coordinator.group_metadata_manager import GroupMetadataManager, TimerKey, TimerKind
from gregor.coordinator.group_state import Group, GroupState
from gregor.coordinator.member import MemberMetadata, Protocols
from gregor.coordinator.append_errors import offset_commit_error
from gregor.coordinator.group_records import offset_commit_record
from gregor.coordinator.offset_manager import CommitOffsets, OffsetManager, java_length
from gregor.coordinator.offset_metadata import OffsetAndMetadata
from gregor.coordinator.offset_metadata import TopicPartition
from gregor.coordinator.rebalance import Rebalancer
from gregor.coordinator.static_membership import take_over_static_member
from gregor.coordinator.txn_offsets import TransactionalOffsets, pending_from_records
from gregor.coordinator.results import (
    GroupDescription,
    GroupOverview,
    JoinResult,
    LeaveMemberResult,
    LeaveResult,
    ListGroupsResult,
    NO_OFFSET,
    MemberDescription,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchResult,
    PartitionOffset,
    SyncResult,
)
from gregor.protocol.error_codes import ErrorCode

UNKNOWN_MEMBER_ID = ""

Result = JoinResult | SyncResult | OffsetCommitResult

LeavingMember = tuple[str, str | None, str | None]
"""(member id or "", group instance id, reason) of one member in a LeaveGroup request."""


class GroupCoordinator:
    def __init__(self, config: GroupCoordinatorConfig, rng: random.Random) -> None:
        self.config = config
        self._rng = rng
        self._manager = GroupMetadataManager(config)
        self._rebalancer = Rebalancer(self._manager)
        self._offsets = OffsetManager(self._manager, self._rebalancer)
        self._txn_offsets = TransactionalOffsets()
        self._consumer = ConsumerGroups(self._manager, rng, self._downgrade)
        self._classic_members = ClassicMembers(self._consumer, self._manager)

    def use_group_configs(self, overrides: Callable[[str], Mapping[str, str]]) -> None:
        """Where a group's GROUP-resource configs are read from (the broker's metadata image)."""
        self._manager.group_config_overrides = overrides

    # -- inspection

    def group(self, group_id: str) -> Group | None:
        return self._manager.groups.get(group_id)

    @property
    def groups(self) -> Mapping[str, Group]:
        return self._manager.groups

    @property
    def consumer_groups(self) -> Mapping[str, ConsumerGroup]:
        """Groups of the consumer protocol (KIP-848), in the same id namespace as `groups`."""
        return self._manager.consumer_groups

    def partition_for(self, group_id: str) -> int:
        """The `__consumer_offsets` partition whose leader coordinates `group_id` (FindCoordinator)."""
        return self._manager.partition_for(group_id)

    @property
    def pending_appends(self) -> int:
        """Appends the coordinator still waits to hear about through `append_done`."""
        return self._manager.pending_appends

    # -- JoinGroup

    def join_group(self, token: object, *, group_id: str, member_id: str, group_instance_id: str | None,
                   protocol_type: str, protocols: Iterable[tuple[str, bytes]], session_timeout_ms: int,
                   rebalance_timeout_ms: int, client_id: str, client_host: str, require_known_member_id: bool,
                   now_ms: int, supports_skip_assignment: bool = False, reason: str | None = None) -> list[Effect]:
        """JoinGroup. `require_known_member_id` is True from v4 (a new member first gets an id
        with MEMBER_ID_REQUIRED), `supports_skip_assignment` from v9. The answer is parked until
        the rebalance completes, unless it can be given at once."""
        out: list[Effect] = []
        member_protocols: Protocols = tuple((name, bytes(metadata)) for name, metadata in protocols)
        respond = self._responder(token, out)
        error = self._manager.status_error(group_id, allow_empty_id=False)
        if error is not None:
            respond(JoinResult(error, member_id))
            return out
        if not (self.config.group_min_session_timeout_ms <= session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
            return out
        consumer_group = self._manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.members:
                return out + self._classic_members.join(
                    token, consumer_group, member_id=member_id, instance_id=group_instance_id,
                    protocol_type=protocol_type, protocols=member_protocols, session_timeout_ms=session_timeout_ms,
                    rebalance_timeout_ms=rebalance_timeout_ms, client_id=client_id, client_host=client_host,
                    require_known_member_id=require_known_member_id, now_ms=now_ms,
                    rng_member_id=self._new_member_id(group_instance_id or client_id))
            self._drop_consumer_group(group_id, now_ms, out)
        is_unknown_member = member_id == UNKNOWN_MEMBER_ID
        group = self._manager.groups.get(group_id)
        if group is None:
            if not is_unknown_member:
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return out
            group = self._manager.create_group(group_id, now_ms)
        if not self._accepts_joining_member(group, member_id):
            self._rebalancer.forget_member(group, member_id, out)
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        else:
            new_member = MemberMetadata(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                        session_timeout_ms, protocol_type, member_protocols)
            reason = reason or "not provided"
            if is_unknown_member:
                self._join_new_member(token, group, new_member, require_known_member_id, supports_skip_assignment,
                                      now_ms, out, reason)
            else:
                self._join_current_member(token, group, new_member, now_ms, out, reason)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._rebalancer.maybe_complete_join(group, now_ms, out)
        return out

    def _accepts_joining_member(self, group: Group, member_id: str) -> bool:
        """group.max.size: while rebalancing, count members that rejoined, so that the last ones
        to rejoin are turned away when the limit was lowered; otherwise count all members."""
        max_size = self.config.group_max_size
        if group.state is GroupState.EMPTY:
            return True
        member = group.members.get(member_id)
        if group.state is GroupState.PREPARING_REBALANCE:
            return (member is not None and member.is_awaiting_join) or group.num_awaiting_join < max_size
        return member is not None or len(group.members) < max_size

    def _join_new_member(self, token: object, group: Group, member: MemberMetadata, require_known_member_id: bool,
                         supports_skip_assignment: bool, now_ms: int, out: list[Effect], reason: str) -> None:
        respond = self._responder(token, out)
        if not group.supports_protocols(member.protocol_type, member.protocol_names):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID))
            return
        instance_id = member.group_instance_id
        member.member_id = self._new_member_id(instance_id if instance_id is not None else member.client_id)
        if instance_id is not None and instance_id in group.static_members:
            take_over_static_member(self._manager, self._rebalancer, token, group, member, supports_skip_assignment,
                                    now_ms, out, reason)
        elif instance_id is None and require_known_member_id:
            self._rebalancer.add_pending_member(group, member.member_id, member.session_timeout_ms, now_ms)
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member.member_id))
        else:
            self._rebalancer.add_member_and_rebalance(
                group, member, token, now_ms, out, f"adding new member {member.member_id}; client reason: {reason}")

    def _join_current_member(self, token: object, group: Group, joining: MemberMetadata, now_ms: int,
                             out: list[Effect], reason: str) -> None:
        respond = self._responder(token, out)
        member_id = joining.member_id
        if not group.supports_protocols(joining.protocol_type, joining.protocol_names):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            if joining.group_instance_id is not None:
                # Pending ids are only handed to dynamic members; Kafka throws here, which its
                # request handler turns into UNKNOWN_SERVER_ERROR.
                respond(JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, member_id))
                return
            self._rebalancer.add_member_and_rebalance(
                group, joining, token, now_ms, out, f"pending member {member_id} joins; client reason: {reason}")
            return
        error = group.member_error(member_id, joining.group_instance_id)
        if error is not None:
            respond(JoinResult(error, member_id))
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE or not member.matches(joining.supported_protocols) or (
                state is GroupState.STABLE and group.is_leader(member_id)):
            # A leader rejoining a stable group forces a rebalance: it is how a consumer leader
            # reacts to metadata changes (new partitions) that do not change its own metadata.
            self._rebalancer.update_member_and_rebalance(
                group, member, joining.supported_protocols, joining.rebalance_timeout_ms,
                joining.session_timeout_ms, token, now_ms, out,
                f"member {member_id} joining group in {state.value}; client reason: {reason}")
        else:
            # Same metadata (a lost JoinGroup answer): the current generation again.
            with_members = state is GroupState.COMPLETING_REBALANCE and group.is_leader(member_id)
            respond(self._rebalancer.join_result(group, member_id, with_members))

    def _new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{uuid.UUID(int=self._rng.getrandbits(128), version=4)}"

    @staticmethod
    def _responder(token: object, out: list[Effect]) -> Callable[[Result], None]:
        if token is None:
            raise ValueError("a request token must not be None")
        return lambda result: out.append(Respond(token, result))

    # -- SyncGroup, Heartbeat, LeaveGroup

    def sync_group(self, token: object, *, group_id: str, generation_id: int, member_id: str,
                   group_instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
                   assignments: Mapping[str, bytes], now_ms: int) -> list[Effect]:
        """SyncGroup. The leader's `assignments` are persisted with the generation; every member's
        answer is parked until that write is done. `protocol_type` / `protocol_name` are None
        before v5, which does not send them."""
        out: list[Effect] = []
        respond = self._responder(token, out)
        error = self._manager.status_error(group_id, allow_empty_id=False)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # The rebalance state was lost with the old coordinator: rejoin, without rediscovering
            # the coordinator (older clients do not expect COORDINATOR_LOAD_IN_PROGRESS here).
            error = ErrorCode.REBALANCE_IN_PROGRESS
        consumer_group = self._manager.consumer_groups.get(group_id)
        if error is None and consumer_group is not None:
            respond(self._classic_members.sync(
                consumer_group, member_id=member_id, instance_id=group_instance_id, generation_id=generation_id,
                protocol_type=protocol_type, protocol_name=protocol_name, now_ms=now_ms))
            return out
        group = self._manager.groups.get(group_id)
        if error is None:
            error = self._sync_error(group, generation_id, member_id, group_instance_id, protocol_type, protocol_name)
        if error is not None:
            respond(SyncResult(error))
            return out
        assert group is not None
        member = group.members[member_id]
        if group.state is GroupState.PREPARING_REBALANCE:
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.state is GroupState.STABLE:
            self._rebalancer.remove_pending_sync_member(group, member_id)
            respond(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))
            self._rebalancer.schedule_heartbeat(group, member, now_ms)
        else:
            self._rebalancer.park_sync(group, member, token, out)
            self._rebalancer.remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                self._store_assignment(group, assignments, now_ms, out)
        return out

    @staticmethod
    def _sync_error(group: Group | None, generation_id: int, member_id: str, group_instance_id: str | None,
                    protocol_type: str | None, protocol_name: str | None) -> ErrorCode | None:
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.member_error(member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
                protocol_name is not None and protocol_name != group.protocol_name):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _store_assignment(self, group: Group, assignments: Mapping[str, bytes], now_ms: int,
                          out: list[Effect]) -> None:
        """Persist the leader's assignment (members it left out get an empty one); once written,
        the group is Stable and every parked SyncGroup gets its share."""
        assignment = {member_id: bytes(assignments.get(member_id, b"")) for member_id in group.members}
        generation_id = group.generation_id
        rebalancer = self._rebalancer

        def stored(error: ErrorCode, done_ms: int, done_out: list[Effect]) -> None:
            # A member may have joined or left meanwhile: only this generation's assignment counts.
            if group.state is not GroupState.COMPLETING_REBALANCE or group.generation_id != generation_id:
                return
            if error is ErrorCode.NONE:
                rebalancer.set_and_propagate_assignment(group, assignment, done_ms, done_out)
                group.transition_to(GroupState.STABLE, done_ms)
            else:
                rebalancer.reset_and_propagate_assignment_error(group, error, done_ms, done_out)
                rebalancer.maybe_prepare_rebalance(group, done_ms, done_out,
                                                   f"error {error.name} storing the group assignment")

        out.append(self._manager.store_group(group, assignment, now_ms, stored))

    def heartbeat(self, *, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                  now_ms: int) -> ErrorCode:
        """Heartbeat: restarts the member's session; REBALANCE_IN_PROGRESS tells it to rejoin."""
        error = self._manager.status_error(group_id, allow_empty_id=False)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE  # the group will be known shortly; answer blindly
        if error is not None:
            return error
        consumer_group = self._manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            return self._classic_members.heartbeat(consumer_group, member_id=member_id, instance_id=group_instance_id,
                                                   generation_id=generation_id, now_ms=now_ms)
        group = self._manager.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.member_error(member_id, group_instance_id)
        if error is None and generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if error is not None:
            return error
        self._rebalancer.schedule_heartbeat(group, group.members[member_id], now_ms)
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(self, *, group_id: str, members: Sequence[LeavingMember],
                    now_ms: int) -> tuple[LeaveResult, list[Effect]]:
        """LeaveGroup (v3+ batches members; older versions are a batch of one). A member may be
        named by group instance id alone (member id ""), as admin tools remove static members."""
        out: list[Effect] = []
        error = self._manager.status_error(group_id, allow_empty_id=False)
        if error is not None:
            return LeaveResult(error), out
        consumer_group = self._manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            left, effects = self._classic_members.leave(consumer_group, members, now_ms)
            return LeaveResult(ErrorCode.NONE, tuple(left)), effects
        group = self._manager.groups.get(group_id)
        results = []
        for member_id, instance_id, reason in members:
            error = ErrorCode.UNKNOWN_MEMBER_ID if group is None else self._leave(
                group, member_id, instance_id, reason or "not provided", now_ms, out)
            results.append(LeaveMemberResult(member_id, instance_id, error))
        return LeaveResult(ErrorCode.NONE, tuple(results)), out

    def _leave(self, group: Group, member_id: str, instance_id: str | None, reason: str, now_ms: int,
               out: list[Effect]) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID:
            current = group.static_members.get(instance_id) if instance_id is not None else None
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            member_id = current
        elif member_id in group.pending_members:
            self._rebalancer.remove_pending_member_and_update_group(group, member_id, now_ms, out)
            return ErrorCode.NONE
        else:
            error = group.member_error(member_id, instance_id)
            if error is not None:
                return error
        self._rebalancer.remove_member_and_update_group(
            group, group.members[member_id], now_ms, out, f"LeaveGroup; client reason: {reason}")
        return ErrorCode.NONE

    # -- offsets

    def commit_offsets(self, token: object, *, group_id: str, generation_id: int, member_id: str,
                       group_instance_id: str | None, retention_time_ms: int, offsets: CommitOffsets,
                       now_ms: int, api_version: int = consumer_offsets.FIRST_MEMBER_EPOCH_COMMIT_VERSION
                       ) -> list[Effect]:
        """OffsetCommit; the answer (per partition) comes once the offsets are written.

        `retention_time_ms` is -1 except from v2-v4 clients that set one. Partitions of unknown
        topics are the broker's to answer (UNKNOWN_TOPIC_OR_PARTITION) before calling this. For a
        consumer group `generation_id` is the member epoch, checked with `api_version`.
        """
        out: list[Effect] = []
        respond = self._responder(token, out)
        error = self._manager.status_error(group_id, allow_empty_id=True)
        if error is not None:
            respond(OffsetCommitResult({partition: error for partition in offsets}))
            return out
        consumer_group = self._manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            error = consumer_offsets.commit_error(consumer_group, member_id, generation_id, api_version)
            if error is not None:
                respond(OffsetCommitResult({partition: error for partition in offsets}))
            else:
                self._offsets.store(token, self._offsets_holder(group_id, now_ms), retention_time_ms, offsets,
                                    now_ms, out)
            return out
        self._offsets.commit(token, self._manager.groups.get(group_id), group_id, generation_id, member_id,
                             group_instance_id, retention_time_ms, offsets, now_ms, out)
        return out

    def fetch_offsets(self, *, group_id: str, partitions: Iterable[TopicPartition] | None, require_stable: bool,
                      now_ms: int, member_id: str | None = None, member_epoch: int = -1) -> OffsetFetchResult:
        """OffsetFetch; `partitions` None means every partition with a committed offset. A member
        of a consumer group (v9+) names itself and its epoch, which are checked.

        Reading changes nothing, so `now_ms` is not used; it is taken like everywhere else.
        """
        error = self._manager.status_error(group_id, allow_empty_id=True)
        consumer_group = self._manager.consumer_groups.get(group_id)
        if error is None and consumer_group is not None:
            error = consumer_offsets.fetch_error(consumer_group, member_id, member_epoch)
        if error is not None:
            return OffsetFetchResult(error)
        result = self._offsets.fetch(self._manager.groups.get(group_id), partitions, require_stable)
        if require_stable and self._txn_offsets.has_pending(group_id):
            unstable = PartitionOffset(NO_OFFSET, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
            result = OffsetFetchResult(result.error, {
                partition: unstable if self._txn_offsets.is_pending(group_id, partition) else offset
                for partition, offset in result.partitions.items()})
        return result

    def commit_transactional_offsets(self, token: object, *, group_id: str, producer_id: int, producer_epoch: int,
                                     generation_id: int, member_id: str, group_instance_id: str | None,
                                     offsets: CommitOffsets, now_ms: int) -> list[Effect]:
        """TxnOffsetCommit: the offsets are written in the producer's transactional batch and
        stay pending until `complete_transaction`; the answer comes once they are written. The
        member and generation (v3+, KIP-447) are checked when given, for a consumer group its
        member and member epoch; an Empty classic group takes them without a generation; a missing
        group is created Empty, as Kafka does, unless a generation is given (ILLEGAL_GENERATION)."""
        out: list[Effect] = []
        respond = self._responder(token, out)

        def reject(error: ErrorCode) -> list[Effect]:
            respond(OffsetCommitResult({partition: error for partition in offsets}))
            return out

        error = self._manager.status_error(group_id, allow_empty_id=False)
        if error is not None:
            return reject(error)
        consumer_group = self._manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            error = consumer_offsets.txn_commit_error(consumer_group, member_id, generation_id)
            if error is not None:
                return reject(error)
        elif generation_id >= 0 and group_id not in self._manager.groups:
            return reject(ErrorCode.ILLEGAL_GENERATION)  # a generation of a group that does not exist
        group = self._manager.groups.get(group_id) or self._manager.create_group(group_id, now_ms)
        if group.state is GroupState.DEAD:
            return reject(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if consumer_group is None:
            error = _classic_txn_commit_error(group, generation_id, member_id, group_instance_id)
            if error is not None:
                return reject(error)
        max_bytes = self.config.offset_metadata_max_bytes
        valid = {partition: OffsetAndMetadata(offset, leader_epoch, metadata or "", now_ms, None)
                 for partition, (offset, leader_epoch, metadata) in offsets.items()
                 if metadata is None or java_length(metadata) <= max_bytes}
        if not valid:
            return reject(ErrorCode.OFFSET_METADATA_TOO_LARGE)
        partition = self._manager.partition_for(group_id)
        store = self._txn_offsets

        def written(error: ErrorCode, _done_ms: int, done_out: list[Effect]) -> None:
            if error is ErrorCode.NONE:
                store.add(partition, producer_id, group_id, valid.items())
            mapped = offset_commit_error(error)
            done_out.append(Respond(token, OffsetCommitResult({
                p: mapped if p in valid else ErrorCode.OFFSET_METADATA_TOO_LARGE for p in offsets})))

        records = [offset_commit_record(group_id, p, offset) for p, offset in valid.items()]
        append = self._manager.append(group, records, now_ms, written)
        out.append(replace(append, producer_id=producer_id, producer_epoch=producer_epoch))
        return out

    def complete_transaction(self, partition: int, producer_id: int, committed: bool, now_ms: int) -> list[Effect]:
        """A transaction's COMMIT or ABORT marker is written on `__consumer_offsets`-`partition`:
        the producer's pending offsets there become the groups' committed offsets, or go."""
        pending = self._txn_offsets.complete(partition, producer_id)
        if not committed or partition not in self._manager.owned_partitions:
            return []
        for group_id, offsets in pending.items():
            group = self._manager.groups.get(group_id) or self._manager.create_group(group_id, now_ms)
            group.offsets.update(offsets)
        return []

    def delete_offsets(self, *, group_id: str, partitions: Iterable[TopicPartition],
                       now_ms: int) -> tuple[OffsetDeleteResult, list[Effect]]:
        """OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for topics a live consumer group still reads,
        NON_EMPTY_GROUP for a live group of another protocol type."""
        out: list[Effect] = []
        error = self._manager.status_error(group_id, allow_empty_id=False)
        if error is not None:
            return OffsetDeleteResult(error), out
        consumer_group = self._manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            return self._delete_consumer_group_offsets(consumer_group, list(partitions), now_ms, out), out
        return self._offsets.delete(self._manager.groups.get(group_id), partitions, now_ms, out), out

    def _delete_consumer_group_offsets(self, group: ConsumerGroup, partitions: list[TopicPartition], now_ms: int,
                                       out: list[Effect]) -> OffsetDeleteResult:
        """A consumer group keeps the offsets of topics its members subscribe to
        (GROUP_SUBSCRIBED_TO_TOPIC); the others go, as Kafka deletes them."""
        subscribed = group.subscribed_topic_names(self._consumer.topics) if group.members else set()
        errors = {partition: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for partition in partitions
                  if partition[0] in subscribed}
        eligible = [partition for partition in partitions if partition not in errors]
        holder = self._manager.groups.get(group.group_id)
        if holder is not None and eligible:
            self._manager.cleanup_group(holder, holder.remove_offsets(eligible), now_ms, out)
        errors.update((partition, ErrorCode.NONE) for partition in eligible)
        return OffsetDeleteResult(ErrorCode.NONE, errors)

    def on_partitions_deleted(self, partitions: Iterable[TopicPartition], now_ms: int) -> list[Effect]:
        """Topic partitions were deleted: drop (and tombstone) every group's offsets for them, as
        Kafka's handleDeletedPartitions; groups left Empty without offsets go away."""
        out: list[Effect] = []
        partitions = list(partitions)
        self._txn_offsets.forget_topic_partitions(partitions)
        self._offsets.forget_partitions(partitions, now_ms, out)
        return out

    # -- admin

    def describe_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        """DescribeGroups; member metadata and assignments only for Stable groups, as Kafka."""
        return [self._describe(group_id) for group_id in group_ids]

    def _describe(self, group_id: str) -> GroupDescription:
        error = self._manager.status_error(group_id, allow_empty_id=True)
        if error is not None:
            return GroupDescription(group_id, error)
        if group_id in self._manager.consumer_groups:
            # Not a classic group: Kafka answers DescribeGroups below v6 with a Dead group (v6+
            # says GROUP_ID_NOT_FOUND); admin clients then use ConsumerGroupDescribe.
            return GroupDescription(group_id, ErrorCode.NONE, GroupState.DEAD.value)
        group = self._manager.groups.get(group_id)
        if group is None:
            return GroupDescription(group_id, ErrorCode.NONE, GroupState.DEAD.value)
        stable = group.state is GroupState.STABLE
        protocol = (group.protocol_name or "") if stable else ""
        members = tuple(MemberDescription(
            member.member_id, member.group_instance_id, member.client_id, member.client_host,
            member.metadata(protocol) if stable else b"", member.assignment if stable else b"")
            for member in group.members.values())
        return GroupDescription(group_id, ErrorCode.NONE, group.state.value, group.protocol_type or "", protocol,
                                members)

    def list_groups(self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()) -> ListGroupsResult:
        """ListGroups; filters are case-insensitive and empty means all. Groups are of type
        "classic" or "consumer" (KIP-848). COORDINATOR_LOAD_IN_PROGRESS (with the groups known so
        far) while any partition is loading."""
        states = {state.lower() for state in states_filter}
        types = {group_type.lower() for group_type in types_filter}
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._manager.loading_partitions else ErrorCode.NONE
        consumer_groups = self._manager.consumer_groups
        overviews = [GroupOverview(*row) for row in consumer_describe.listed(
            group for group in consumer_groups.values() if consumer_describe.matches_filters(group, states, types))]
        if not types or "classic" in types:
            overviews[:0] = [GroupOverview(group.group_id, group.protocol_type or "", group.state.value)
                             for group in self._manager.groups.values()
                             if group.group_id not in consumer_groups
                             and (not states or group.state.value.lower() in states)]
        return ListGroupsResult(error, tuple(overviews))

    def delete_groups(self, group_ids: Iterable[str], now_ms: int) -> tuple[dict[str, ErrorCode], list[Effect]]:
        """DeleteGroups: only Empty groups; their offsets and metadata are tombstoned."""
        out: list[Effect] = []
        errors = {group_id: self._delete_group(group_id, now_ms, out) for group_id in dict.fromkeys(group_ids)}
        return errors, out

    def _delete_group(self, group_id: str, now_ms: int, out: list[Effect]) -> ErrorCode:
        error = self._manager.status_error(group_id, allow_empty_id=True)
        if error is not None:
            return error
        consumer_group = self._manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.members:
                return ErrorCode.NON_EMPTY_GROUP
            self._drop_consumer_group(group_id, now_ms, out)
            holder = self._manager.groups.get(group_id)
            if holder is not None:
                self._manager.cleanup_group(holder, holder.remove_offsets(list(holder.offsets)), now_ms, out)
            return ErrorCode.NONE
        group = self._manager.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        group.transition_to(GroupState.DEAD, now_ms)
        self._manager.cleanup_group(group, group.remove_offsets(list(group.offsets)), now_ms, out)
        return ErrorCode.NONE

    # -- time and writes

    def tick(self, now_ms: int) -> list[Effect]:
        """Fire every timer due at `now_ms`, in deadline order."""
        out: list[Effect] = []
        deadlines = self._manager.deadlines
        while (key := deadlines.pop_due(now_ms)) is not None:
            if key.kind is TimerKind.OFFSET_EXPIRATION:
                self._offsets.expire(now_ms, out)
                self._drop_forgotten_consumer_groups(now_ms, out)
                deadlines.schedule(key, now_ms + self.config.offsets_retention_check_interval_ms)
            elif key.kind in (TimerKind.CONSUMER_SESSION, TimerKind.CONSUMER_REVOCATION):
                self._consumer.on_timer(key, now_ms, out)
            else:
                self._rebalancer.on_timer(key, self._manager.groups[key.group_id], now_ms, out)
        return out

    def next_deadline(self) -> int | None:
        """When `tick` next has something to do; None when no timer is set."""
        return self._manager.deadlines.next_deadline()

    def append_done(self, append_id: int, error: ErrorCode, now_ms: int) -> list[Effect]:
        """The outcome of an `AppendRecords` with this `append_id` (NONE once committed)."""
        return self._manager.append_done(append_id, error, now_ms)

    # -- __consumer_offsets leadership

    def begin_load(self, partition: int) -> None:
        """This broker became leader of `partition`; its groups answer COORDINATOR_LOAD_IN_PROGRESS
        until `load_partition`."""
        self._manager.begin_load(partition)

    def load_partition(self, partition: int, records: Iterable[tuple[bytes, bytes | None]],
                       now_ms: int, open_transactions: Mapping[int, Sequence[tuple[bytes, bytes | None]]]
                       | None = None) -> list[Effect]:
        """Rebuild the groups and offsets of `partition` from its records (key, value-or-None, in
        offset order; a transaction's records where its COMMIT marker is, an aborted one's not at
        all) and start coordinating them; loaded members get a fresh session. Loading a
        partition that is already loaded starts over from the records. `open_transactions`: the
        records of transactions without a marker yet, by producer id (pending offsets again)."""
        out = self.unload_partition(partition, now_ms)
        groups, consumer_groups = self._manager.load(partition, records, now_ms)
        for group in groups:
            self._rebalancer.on_group_loaded(group, now_ms, out)
        self._consumer.on_loaded(consumer_groups, now_ms)
        for producer_id, pending in (open_transactions or {}).items():
            for group_id, topic_partition, offset in pending_from_records(pending):
                self._txn_offsets.add(partition, producer_id, group_id, [(topic_partition, offset)])
        expiration = TimerKey(TimerKind.OFFSET_EXPIRATION)
        if self._manager.deadlines.deadline(expiration) is None:
            self._manager.deadlines.schedule(expiration, now_ms + self.config.offsets_retention_check_interval_ms)
        return out

    def unload_partition(self, partition: int, now_ms: int) -> list[Effect]:
        """This broker no longer leads `partition`: forget its groups; parked requests get
        NOT_COORDINATOR and clients find the new coordinator."""
        out: list[Effect] = []
        self._txn_offsets.forget_partition(partition)
        for group in self._manager.release(partition):
            self._rebalancer.on_group_unloaded(group, now_ms, out)
        self._consumer.on_unloaded([group_id for group_id in self._manager.consumer_groups
                                    if self._manager.partition_for(group_id) == partition])
        return out

    # -- the consumer protocol (KIP-848)

    def set_topics(self, topics: Mapping[str, TopicInfo]) -> None:
        """The cluster's topics as the broker's metadata now has them; consumer groups see a
        change (a topic created or deleted, partitions added) at their members' next heartbeat."""
        self._consumer.topics = topics

    def consumer_group_heartbeat(self, token: object, request: HeartbeatRequest, now_ms: int) -> list[Effect]:
        """ConsumerGroupHeartbeat; answered with a `Respond(token, HeartbeatResult)` once what it
        changed is written."""
        return self._consumer.heartbeat(token, request, now_ms, self._give_up_classic_group)

    def consumer_group_describe(self, group_ids: Iterable[str]) -> list[ConsumerGroupDescription]:
        results = []
        for group_id in group_ids:
            error = self._manager.status_error(group_id, allow_empty_id=True)
            if error is not None:
                results.append(ConsumerGroupDescription(group_id, error))
                continue
            classic = self._manager.groups.get(group_id)
            results.append(consumer_describe.describe(
                group_id, self._manager.consumer_groups.get(group_id),
                classic is not None and classic.protocol_type is not None,
                self.config.group_consumer_assignors[0]))
        return results

    def _give_up_classic_group(self, group_id: str, now_ms: int, records: list[Record],
                               out: list[Effect]) -> ConsumerGroup | None:
        """A consumer group is created where a classic one may be: see `migration.upgrade`."""
        try:
            return upgrade(self._manager, group_id, self._consumer.topics, now_ms, records, out)
        except CannotUpgrade as error:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, str(error)) from None

    def _downgrade(self, group: ConsumerGroup, now_ms: int, records: list[Record], out: list[Effect]) -> None:
        downgrade(self._manager, self._rebalancer, group, self._consumer.topics, now_ms, records, out)

    def _drop_consumer_group(self, group_id: str, now_ms: int, out: list[Effect]) -> None:
        """An Empty consumer group goes (deleted, or a classic group takes its id); its offsets stay."""
        self._consumer.on_unloaded([group_id])
        out.append(self._manager.append_to(group_id, consumer_group_tombstones(group_id), now_ms, None))

    def _drop_forgotten_consumer_groups(self, now_ms: int, out: list[Effect]) -> None:
        """Consumer groups without members or committed offsets go, as Kafka's cleanup deletes them."""
        for group_id, group in list(self._manager.consumer_groups.items()):
            if not group.members and group_id not in self._manager.groups:
                self._drop_consumer_group(group_id, now_ms, out)

    def _offsets_holder(self, group_id: str, now_ms: int) -> Group:
        """Committed offsets of a consumer group live, as those of groups that only commit, in an
        Empty classic group without a protocol type (one offsets table for every group id)."""
        group = self._manager.groups.get(group_id)
        return group if group is not None else self._manager.create_group(group_id, now_ms)


def _classic_txn_commit_error(group: Group, generation_id: int, member_id: str,
                              group_instance_id: str | None) -> ErrorCode | None:
    """Kafka's ClassicGroup.validateOffsetCommit for a transaction: nothing to check when the
    commit names no member or generation, nor for an Empty group without a generation (its members
    left; the producer's offsets still count); else the member must be known at the group's
    generation."""
    if generation_id < 0 and (group.state is GroupState.EMPTY or not (member_id or group_instance_id is not None)):
        return None
    error = group.member_error(member_id, group_instance_id)
    if error is None and generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    return error
