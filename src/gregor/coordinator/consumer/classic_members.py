"""Classic consumers in a consumer group (KIP-848 online migration, Kafka's
classicGroupJoinToConsumerGroup and siblings).

A member that speaks JoinGroup / SyncGroup / Heartbeat / LeaveGroup takes part in a consumer
group like any other member: its subscription comes from its JoinGroup's embedded subscription,
the broker's assignor gives it partitions, and it is reconciled with what its subscription says it
owns (nothing, for an eager consumer: it gave everything up before rejoining). Its generation is
its member epoch. A heartbeat answers REBALANCE_IN_PROGRESS while the member is not reconciled to
the group epoch, which makes it rejoin to get its next assignment; SyncGroup returns what it may
own now. Its session is the one it asked for in JoinGroup.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from gregor.coordinator.consumer.classic_protocol import read_subscription, write_assignment
from gregor.coordinator.consumer.group import ConsumerGroup
from gregor.coordinator.consumer.heartbeat import ConsumerGroups
from gregor.coordinator.consumer.member import ClassicMemberInfo, ConsumerGroupMember, MemberState
from gregor.coordinator.effects import Effect, Record, Respond
from gregor.coordinator.group_metadata_manager import GroupMetadataManager
from gregor.coordinator.results import JoinResult, LeaveMemberResult, SyncResult
from gregor.coordinator.subscription import CONSUMER_PROTOCOL_TYPE
from gregor.protocol.error_codes import ErrorCode

LeavingMember = tuple[str, str | None, str | None]


class ClassicMembers:
    def __init__(self, consumer: ConsumerGroups, manager: GroupMetadataManager) -> None:
        self._consumer = consumer
        self._manager = manager

    def join(self, token: object, group: ConsumerGroup, *, member_id: str, instance_id: str | None,
             protocol_type: str, protocols: tuple[tuple[str, bytes], ...], session_timeout_ms: int,
             rebalance_timeout_ms: int, client_id: str, client_host: str, require_known_member_id: bool,
             now_ms: int, rng_member_id: str) -> list[Effect]:
        """JoinGroup of a classic consumer to a consumer group with members; answered once the
        records are written, with its member epoch as the generation."""
        out: list[Effect] = []

        def answer(result: JoinResult) -> list[Effect]:
            out.append(Respond(token, result))
            return out

        subscription = read_subscription(protocols[0][1], self._consumer.topics) if protocols else None
        if protocol_type != CONSUMER_PROTOCOL_TYPE or subscription is None \
                or not self._supports(group, {name for name, _ in protocols}):
            return answer(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        is_unknown = not member_id
        if is_unknown:
            member_id = rng_member_id
            if require_known_member_id and instance_id is None:
                return answer(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
        records: list[Record] = []
        member = group.members.get(member_id)
        if instance_id is not None and instance_id in group.static_members \
                and group.static_members[instance_id] != member_id:
            if not is_unknown:
                return answer(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            previous = group.members[group.static_members[instance_id]]
            target = group.target_of(previous.member_id)
            self._consumer.remove(group, previous.member_id, records)  # a new incarnation replaces it
            member = replace(previous, member_id=member_id)
            group.target[member_id] = target
        elif member is not None and member.classic is None:
            return answer(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
        is_new = member is None
        if member is None:
            if len(group.members) >= self._manager.config.group_consumer_max_size:
                return answer(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id))
            member = ConsumerGroupMember(member_id)
        updated = replace(member, instance_id=instance_id, rack_id=subscription.rack_id or member.rack_id,
                          client_id=client_id, client_host=client_host,
                          subscribed_topic_names=subscription.topics, subscribed_topic_regex=None,
                          rebalance_timeout_ms=rebalance_timeout_ms,
                          classic=ClassicMemberInfo(session_timeout_ms, protocols))
        reconciled = self._consumer.update_and_reconcile(group, member, updated, is_new, subscription.owned, now_ms,
                                                         records)
        result = JoinResult(ErrorCode.NONE, member_id, reconciled.member_epoch, CONSUMER_PROTOCOL_TYPE,
                            protocols[0][0], "")

        def written(error: ErrorCode, _done_ms: int, done_out: list[Effect]) -> None:
            done_out.append(Respond(token, result if error is ErrorCode.NONE
                                    else JoinResult(ErrorCode.NOT_COORDINATOR if error in (
                                        ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR)
                                        else ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)))

        out.append(self._manager.append_to(group.group_id, records, now_ms, written))
        return out

    @staticmethod
    def _supports(group: ConsumerGroup, names: set[str]) -> bool:
        """A classic member must share a protocol with every classic member already there."""
        for member in group.members.values():
            if member.classic is not None and not names & {name for name, _ in member.classic.protocols}:
                return False
        return True

    def _classic_member(self, group: ConsumerGroup, member_id: str,
                        instance_id: str | None) -> ConsumerGroupMember | ErrorCode:
        if instance_id is not None:
            static_id = group.static_members.get(instance_id)
            if static_id is not None and static_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return member

    def sync(self, group: ConsumerGroup, *, member_id: str, instance_id: str | None, generation_id: int,
             protocol_type: str | None, protocol_name: str | None, now_ms: int) -> SyncResult:
        """SyncGroup: the member's partitions now (fewer than its target while others still hold some)."""
        member = self._classic_member(group, member_id, instance_id)
        if isinstance(member, ErrorCode):
            return SyncResult(member)
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        name = member.classic.protocol_name
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != name):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        self._consumer.schedule_timers(group, member, member, now_ms)
        names = {**{info.topic_id: name for name, info in self._consumer.topics.items()}, **group.topic_names_by_id()}
        return SyncResult(ErrorCode.NONE, CONSUMER_PROTOCOL_TYPE, name,
                          write_assignment(member.assigned_partitions, names))

    def heartbeat(self, group: ConsumerGroup, *, member_id: str, instance_id: str | None, generation_id: int,
                  now_ms: int) -> ErrorCode:
        """Heartbeat: REBALANCE_IN_PROGRESS until the member is reconciled to the group epoch."""
        member = self._classic_member(group, member_id, instance_id)
        if isinstance(member, ErrorCode):
            return member
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self._consumer.schedule_timers(group, member, member, now_ms)
        if member.state is not MemberState.STABLE or member.member_epoch != group.group_epoch:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group: ConsumerGroup, members: Sequence[LeavingMember],
              now_ms: int) -> tuple[list[LeaveMemberResult], list[Effect]]:
        """LeaveGroup: each member named (by id, or by instance id alone) leaves the group."""
        records: list[Record] = []
        results = []
        for member_id, instance_id, _reason in members:
            if not member_id and instance_id is not None:
                found: ConsumerGroupMember | ErrorCode = ErrorCode.UNKNOWN_MEMBER_ID
                static_id = group.static_members.get(instance_id)
                if static_id is not None:
                    found = group.members[static_id]
            else:
                found = self._classic_member(group, member_id, instance_id)
            if isinstance(found, ErrorCode):
                results.append(LeaveMemberResult(member_id, instance_id, found))
            else:
                self._consumer.fence(group, found.member_id, records)
                results.append(LeaveMemberResult(member_id, instance_id, ErrorCode.NONE))
        out: list[Effect] = []
        if records:
            out.append(self._manager.append_to(group.group_id, records, now_ms, None))
        return results, out

