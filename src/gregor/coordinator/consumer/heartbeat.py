"""ConsumerGroupHeartbeat and the consumer groups' timers (Kafka's GroupMetadataManager for the
consumer protocol).

One heartbeat does all of KIP-848's work for its member, in Kafka's order:

1. validate the request, the member and its epoch (a member ahead of the coordinator, or behind
   it other than by one lost answer, is fenced with FENCED_MEMBER_EPOCH);
2. update the member's subscription; a new member, a changed subscription or a change of the
   subscribed topics (created, deleted, more partitions) is a new group epoch;
3. a group epoch past the assignment epoch computes a new target assignment with the group's
   assignor;
4. reconcile the member toward its target (`reconciliation.reconcile`);
5. write what changed to `__consumer_offsets` and answer once it is written.

Timers: a member's session (`group.consumer.session.timeout.ms`, restarted by each heartbeat)
and, while it has partitions to revoke, its rebalance timeout; either one expiring removes it.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Mapping

from gregor.coordinator.consumer.assignment import Assignment, contains_all
from gregor.coordinator.consumer.assignors import ASSIGNORS, MemberSpec
from gregor.coordinator.consumer.group import ConsumerGroup, TopicInfo
from gregor.coordinator.consumer.member import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroupMember, MemberState
from gregor.coordinator.consumer.migration import only_classic_members_left
from gregor.coordinator.consumer.reconciliation import reconcile
from gregor.coordinator.consumer.records import (
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    member_tombstones,
    partition_metadata_record,
    target_assignment_record,
    target_epoch_record,
)
from gregor.coordinator.consumer.results import HeartbeatResult
from gregor.coordinator.consumer.topic_regex import InvalidRegex, compile_regex
from gregor.metadata.group_configs import group_int
from gregor.coordinator.effects import Effect, Record, Respond
from gregor.coordinator.group_metadata_manager import GroupMetadataManager, TimerKey, TimerKind
from gregor.protocol.error_codes import ErrorCode


Downgrade = Callable[[ConsumerGroup, int, list[Record], list[Effect]], None]
ConvertClassic = Callable[[str, int, list[Record], list[Effect]], ConsumerGroup | None]


@dataclass(frozen=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat's fields; None where the request says "unchanged"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 0


class HeartbeatError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class ConsumerGroups:
    def __init__(self, manager: GroupMetadataManager, rng: random.Random, downgrade: Downgrade) -> None:
        """`downgrade` turns a group whose last consumer-protocol member left into a classic group."""
        self._manager = manager
        self._config = manager.config
        self._rng = rng
        self._downgrade = downgrade
        self.topics: Mapping[str, TopicInfo] = {}
        """The cluster's topics by name, as the broker's metadata has them (`set_topics`)."""

    @property
    def groups(self) -> dict[str, ConsumerGroup]:
        return self._manager.consumer_groups

    def heartbeat(self, token: object, request: HeartbeatRequest, now_ms: int,
                  convert_classic: ConvertClassic) -> list[Effect]:
        """Answer a heartbeat with a `Respond(token, HeartbeatResult)`, after its records are
        written. `convert_classic` gives up a classic group of the same id: gone (None), the
        consumer group it became (online upgrade), or a HeartbeatError when it cannot."""
        out: list[Effect] = []
        records: list[Record] = []
        try:
            self._validate(request)
            error = self._manager.status_error(request.group_id, allow_empty_id=False)
            if error is not None:
                raise HeartbeatError(error, error.name)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                result = self._leave(request, now_ms, records, out)
            else:
                result = self._join_or_heartbeat(request, now_ms, records, convert_classic, out)
        except HeartbeatError as failure:
            out.append(Respond(token, HeartbeatResult(failure.error, failure.message)))
            return out
        if not records:
            out.append(Respond(token, result))
            return out

        def written(error: ErrorCode, _done_ms: int, done_out: list[Effect]) -> None:
            if error is ErrorCode.NONE:
                done_out.append(Respond(token, result))
            else:
                failure = _append_error(error)
                done_out.append(Respond(token, HeartbeatResult(failure, f"writing the group failed: {error.name}")))

        out.append(self._manager.append_to(request.group_id, records, now_ms, written))
        return out

    # -- validation

    def _validate(self, request: HeartbeatRequest) -> None:
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if not request.group_id:
            raise invalid("GroupId can't be empty.")
        if request.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if request.rack_id == "":
            raise invalid("RackId can't be empty.")
        epoch = request.member_epoch
        if (epoch != 0 or request.version >= 1) and not request.member_id:
            raise invalid("MemberId can't be empty.")
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif epoch == STATIC_LEAVE_EPOCH:
            if request.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif epoch < STATIC_LEAVE_EPOCH:
            raise invalid(f"MemberEpoch {epoch} is invalid.")
        assignor = request.server_assignor
        if assignor is not None and assignor not in self._assignors():
            raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                                 f"ServerAssignor {assignor} is not supported. Supported assignors: "
                                 f"{', '.join(self._assignors())}.")
        if request.subscribed_topic_regex is not None:
            try:
                compile_regex(request.subscribed_topic_regex)
            except InvalidRegex as error:
                raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                     f"SubscribedTopicRegex {request.subscribed_topic_regex!r} is invalid: "
                                     f"{error}") from None

    def _session_ms(self, group_id: str) -> int:
        """The group's session timeout: its GROUP config (read at each heartbeat, so a change
        applies from the next one), else the broker's key; `_interval_ms` likewise."""
        return group_int(self._manager.group_config_overrides(group_id), "consumer.session.timeout.ms",
                         self._config.group_consumer_session_timeout_ms)

    def _interval_ms(self, group_id: str) -> int:
        return group_int(self._manager.group_config_overrides(group_id), "consumer.heartbeat.interval.ms",
                         self._config.group_consumer_heartbeat_interval_ms)

    def _assignors(self) -> tuple[str, ...]:
        return self._config.group_consumer_assignors

    # -- leaving

    def _leave(self, request: HeartbeatRequest, now_ms: int, records: list[Record],
               out: list[Effect]) -> HeartbeatResult:
        group = self.groups.get(request.group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {request.group_id} not found.")
        member = self._current_member(group, request)
        if request.member_epoch == STATIC_LEAVE_EPOCH:
            left = replace(member.with_epoch(STATIC_LEAVE_EPOCH), partitions_pending_revocation={})
            group.put_member(left)
            self._manager.deadlines.cancel(self._key(TimerKind.CONSUMER_REVOCATION, group, member.member_id))
            records.append(current_assignment_record(group.group_id, left))
        else:
            self.fence(group, member.member_id, records)
            self._maybe_downgrade(group, now_ms, records, out)
        return HeartbeatResult(ErrorCode.NONE, None, member.member_id, request.member_epoch, 0)

    def _current_member(self, group: ConsumerGroup, request: HeartbeatRequest) -> ConsumerGroupMember:
        if request.instance_id is not None:
            static_id = group.static_members.get(request.instance_id)
            if static_id is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Instance id {request.instance_id} is unknown in group {group.group_id}.")
            if static_id != request.member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                     f"Static member {request.member_id} with instance id {request.instance_id} "
                                     f"was replaced by member {static_id}.")
        member = group.members.get(request.member_id)
        if member is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {request.member_id} is not a member of group {group.group_id}.")
        return member

    # -- joining and heartbeats

    def _join_or_heartbeat(self, request: HeartbeatRequest, now_ms: int, records: list[Record],
                           convert_classic: ConvertClassic, out: list[Effect]) -> HeartbeatResult:
        group = self.groups.get(request.group_id)
        joining = request.member_epoch == 0
        if group is None:
            if not joining:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {request.group_id} not found.")
            converted = convert_classic(request.group_id, now_ms, records, out)
            group = self.groups[request.group_id] = converted or ConsumerGroup(request.group_id)
            if converted is not None:
                self._refresh_subscription_metadata(group, records)
                for member in group.members.values():
                    self.schedule_timers(group, None, member, now_ms)
        if joining:
            member, is_new = self._joining_member(group, request, records)
        else:
            member, is_new = self._heartbeating_member(group, request), False
        updated = replace(
            member,
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            client_id=request.client_id, client_host=request.client_host,
            subscribed_topic_names=(tuple(sorted(set(request.subscribed_topic_names)))
                                    if request.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=(request.subscribed_topic_regex or None
                                    if request.subscribed_topic_regex is not None else member.subscribed_topic_regex),
            rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=request.server_assignor if request.server_assignor is not None else member.server_assignor)
        reconciled = self.update_and_reconcile(group, member, updated, is_new, request.owned, now_ms, records)
        # As Kafka: the assignment goes with a join, a full request (what a member sends after an
        # error: rebalance timeout, subscription and owned partitions all set) or a change.
        full_request = request.rebalance_timeout_ms != -1 and request.owned is not None and (
            request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
        send_assignment = (joining or full_request
                           or reconciled.assigned_partitions != member.assigned_partitions)
        return HeartbeatResult(ErrorCode.NONE, None, reconciled.member_id, reconciled.member_epoch,
                               self._interval_ms(group.group_id),
                               reconciled.assigned_partitions if send_assignment else None)

    def update_and_reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                             is_new: bool, owned: Assignment | None, now_ms: int,
                             records: list[Record]) -> ConsumerGroupMember:
        """Steps 2-4 for `member`, now `updated` (its subscription from the request): a new group
        epoch if what the assignment depends on changed, a new target if due, the member
        reconciled with `owned` (what it says it owns), its timers; what changed is recorded."""
        group_id = group.group_id
        bump = is_new or updated.subscription_changed_fields != member.subscription_changed_fields
        if is_new or updated.metadata_fields != member.metadata_fields:
            records.append(member_metadata_record(group_id, updated))
        group.put_member(updated)
        bump = self._refresh_subscription_metadata(group, records) or bump
        if bump:
            group.group_epoch += 1
            records.append(group_epoch_record(group_id, group.group_epoch))
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, records)
        reconciled = reconcile(updated, group.assignment_epoch, group.target_of(updated.member_id), owned,
                               group.owner_of)
        if is_new or reconciled.assignment_fields != updated.assignment_fields:
            records.append(current_assignment_record(group_id, reconciled))
            group.put_member(reconciled)
        self.schedule_timers(group, member if not is_new else None, reconciled, now_ms)
        return reconciled

    def _joining_member(self, group: ConsumerGroup, request: HeartbeatRequest,
                        records: list[Record]) -> tuple[ConsumerGroupMember, bool]:
        """The member a MemberEpoch 0 heartbeat is; (member, whether it is new to the group)."""
        member_id = request.member_id or self._new_member_id()
        instance_id = request.instance_id
        if instance_id is not None and instance_id in group.static_members:
            previous = group.members[group.static_members[instance_id]]
            if previous.member_epoch != STATIC_LEAVE_EPOCH:
                raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                     f"Static member {previous.member_id} with instance id {instance_id} is not "
                                     "released yet: it must leave with MemberEpoch -2 first.")
            # The static member is back: a new member id takes over its assignment and target,
            # with no new group epoch, so that nothing moves.
            target = group.target_of(previous.member_id)
            self.remove(group, previous.member_id, records)
            member = replace(previous, member_id=member_id, partitions_pending_revocation={},
                             state=MemberState.STABLE)
            group.target[member_id] = target
            records.append(target_assignment_record(group.group_id, member_id, target))
            records.append(member_metadata_record(group.group_id, member))
            return member, False
        if member_id in group.members:
            # A member restarted with the id it had: its old incarnation is gone with its partitions.
            self.fence(group, member_id, records)
        if len(group.members) >= self._config.group_consumer_max_size:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of "
                                 f"{self._config.group_consumer_max_size} members.")
        return ConsumerGroupMember(member_id, rebalance_timeout_ms=request.rebalance_timeout_ms), True

    def _heartbeating_member(self, group: ConsumerGroup, request: HeartbeatRequest) -> ConsumerGroupMember:
        member = self._current_member(group, request)
        if member.classic is not None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member.member_id} uses the classic protocol in group {group.group_id}.")
        received, known = request.member_epoch, member.member_epoch
        if received > known:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a greater member epoch ({received}) than the one "
                                 f"known by the group coordinator ({known}). The member must abandon all its "
                                 "partitions and rejoin.")
        if received < known and (received != member.previous_member_epoch or request.owned is None
                                 or not contains_all(member.assigned_partitions, request.owned)):
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch ({received}) than the one "
                                 f"known by the group coordinator ({known}). The member must abandon all its "
                                 "partitions and rejoin.")
        return member

    def _new_member_id(self) -> str:
        return base64.urlsafe_b64encode(self._rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")

    # -- the assignment

    def _refresh_subscription_metadata(self, group: ConsumerGroup, records: list[Record]) -> bool:
        """Whether the subscribed topics (or their partition counts) changed; written if so."""
        names = group.subscribed_topic_names(self.topics)
        metadata = {name: self.topics[name] for name in sorted(names) if name in self.topics}
        if metadata == group.subscription_metadata:
            return False
        group.subscription_metadata = metadata
        records.append(partition_metadata_record(group.group_id, metadata))
        return True

    def _assign(self, group: ConsumerGroup, records: list[Record]) -> None:
        assignor = ASSIGNORS[group.preferred_assignor(self._assignors()[0])]
        specs = {member_id: MemberSpec(group.member_topic_ids(member), group.target_of(member_id), member.rack_id)
                 for member_id, member in group.members.items()}
        partitions = {info.topic_id: info.num_partitions for info in group.subscription_metadata.values()}
        racks = {info.topic_id: info.partition_racks for info in group.subscription_metadata.values()}
        target = assignor.assign(specs, partitions, racks)
        for member_id, assignment in target.items():
            if member_id not in group.target or group.target[member_id] != assignment:
                records.append(target_assignment_record(group.group_id, member_id, assignment))
        group.target = dict(target)
        group.assignment_epoch = group.group_epoch
        records.append(target_epoch_record(group.group_id, group.assignment_epoch))

    # -- removal and timers

    def fence(self, group: ConsumerGroup, member_id: str, records: list[Record]) -> None:
        """Remove a member (it left, or its session or rebalance timeout expired): a new group
        epoch, and its partitions are free at once."""
        self.remove(group, member_id, records)
        self._refresh_subscription_metadata(group, records)
        group.group_epoch += 1
        records.append(group_epoch_record(group.group_id, group.group_epoch))

    def remove(self, group: ConsumerGroup, member_id: str, records: list[Record]) -> None:
        """Drop a member and its target and timers, without a new group epoch (the caller decides)."""
        records.extend(member_tombstones(group.group_id, member_id))
        group.remove_member(member_id)
        group.target.pop(member_id, None)
        for kind in (TimerKind.CONSUMER_SESSION, TimerKind.CONSUMER_REVOCATION):
            self._manager.deadlines.cancel(self._key(kind, group, member_id))

    def schedule_timers(self, group: ConsumerGroup, before: ConsumerGroupMember | None,
                         after: ConsumerGroupMember, now_ms: int) -> None:
        deadlines = self._manager.deadlines
        session_ms = (after.classic.session_timeout_ms if after.classic is not None
                      else self._session_ms(group.group_id))
        deadlines.schedule(self._key(TimerKind.CONSUMER_SESSION, group, after.member_id), now_ms + session_ms)
        revocation = self._key(TimerKind.CONSUMER_REVOCATION, group, after.member_id)
        if after.state is not MemberState.UNREVOKED_PARTITIONS:
            deadlines.cancel(revocation)
        elif before is None or before.assignment_fields != after.assignment_fields:
            # Each new revocation gets the member's whole rebalance timeout, as in Kafka.
            deadlines.schedule(revocation, now_ms + max(after.rebalance_timeout_ms, 0))

    @staticmethod
    def _key(kind: TimerKind, group: ConsumerGroup, member_id: str) -> TimerKey:
        return TimerKey(kind, group.group_id, member_id)

    def on_timer(self, key: TimerKey, now_ms: int, out: list[Effect]) -> None:
        """A session or rebalance timeout expired: the member is removed."""
        group = self.groups.get(key.group_id)
        member = group.members.get(key.member_id) if group is not None else None
        if group is None or member is None:
            return
        if key.kind is TimerKind.CONSUMER_REVOCATION and member.state is not MemberState.UNREVOKED_PARTITIONS:
            return
        records: list[Record] = []
        self.fence(group, key.member_id, records)
        self._maybe_downgrade(group, now_ms, records, out)
        out.append(self._manager.append_to(key.group_id, records, now_ms, None))

    def _maybe_downgrade(self, group: ConsumerGroup, now_ms: int, records: list[Record], out: list[Effect]) -> None:
        """The last consumer-protocol member left a group of classic members: a classic group again
        (unless it is larger than a classic group may be, `group.max.size`, as Kafka checks)."""
        if only_classic_members_left(group) and len(group.members) <= self._config.group_max_size:
            self.on_unloaded([group.group_id])
            self._downgrade(group, now_ms, records, out)

    def on_loaded(self, groups: Iterable[ConsumerGroup], now_ms: int) -> None:
        """Groups replayed by a new coordinator: every member gets a fresh session."""
        for group in groups:
            self.groups[group.group_id] = group
            for member in group.members.values():
                self.schedule_timers(group, None, member, now_ms)

    def on_unloaded(self, group_ids: Iterable[str]) -> None:
        for group_id in group_ids:
            group = self.groups.pop(group_id, None)
            if group is not None:
                for member_id in group.members:
                    for kind in (TimerKind.CONSUMER_SESSION, TimerKind.CONSUMER_REVOCATION):
                        self._manager.deadlines.cancel(TimerKey(kind, group_id, member_id))


def _append_error(error: ErrorCode) -> ErrorCode:
    """What a heartbeat whose records could not be written answers: clients retry these."""
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.COORDINATOR_NOT_AVAILABLE
