"""Online migration of a group between the two protocols (KIP-848, Kafka's convertToConsumerGroup
and convertToClassicGroup).

- **Upgrade**: the first ConsumerGroupHeartbeat for a classic `consumer` group with members turns
  it into a consumer group: each classic member keeps its partitions, its generation becomes its
  member epoch, the generation the group epoch, the current assignment the target. The newcomer's
  join then starts a new group epoch, and the classic members move on by rejoining.
- **Downgrade**: when the last consumer-protocol member leaves a group of classic members, it
  becomes a classic group again at generation = group epoch, every member with its partitions,
  and a rebalance starts so that they rejoin as classic members.

Both write what Kafka writes: the old group's tombstones and the new group's records, in one batch.
"""

from __future__ import annotations

import uuid
from typing import Mapping

from gregor.coordinator.consumer.classic_protocol import read_assignment, read_subscription, write_assignment
from gregor.coordinator.consumer.group import ConsumerGroup, TopicInfo
from gregor.coordinator.consumer.member import ClassicMemberInfo, ConsumerGroupMember, MemberState
from gregor.coordinator.consumer.records import (
    current_assignment_record,
    group_epoch_record,
    group_tombstones,
    member_metadata_record,
    member_tombstones,
    target_assignment_record,
    target_epoch_record,
)
from gregor.coordinator.effects import Effect, Record, Respond
from gregor.coordinator.group_metadata_manager import GroupMetadataManager
from gregor.coordinator.group_records import group_metadata_record, group_tombstone
from gregor.coordinator.group_state import Group, GroupState
from gregor.coordinator.member import MemberMetadata
from gregor.coordinator.rebalance import Rebalancer
from gregor.coordinator.results import JoinResult, SyncResult
from gregor.coordinator.subscription import CONSUMER_PROTOCOL_TYPE
from gregor.protocol.error_codes import ErrorCode


class CannotUpgrade(Exception):
    """The classic group cannot become a consumer group; the message says why (as Kafka's)."""


def to_consumer_group(classic: Group, topics: Mapping[str, TopicInfo], max_size: int,
                      records: list[Record]) -> ConsumerGroup:
    """The consumer group a classic group with members becomes (its records appended)."""
    group_id = classic.group_id
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise CannotUpgrade(f"Cannot upgrade classic group {group_id} to consumer group because the group does "
                            "not use the consumer embedded protocol.")
    if len(classic.members) > max_size:
        raise CannotUpgrade(f"Cannot upgrade classic group {group_id} to consumer group because the group size "
                            "exceeds the consumer group maximum size.")
    group = ConsumerGroup(group_id)
    group.group_epoch = group.assignment_epoch = classic.generation_id
    records.append(group_tombstone(group_id))
    for member in classic.members.values():
        protocols = member.supported_protocols
        metadata = member.metadata(classic.protocol_name) if classic.protocol_name in member.protocol_names \
            else protocols[0][1]
        subscription = read_subscription(metadata, topics)
        assigned = read_assignment(member.assignment, topics)
        if subscription is None or assigned is None:
            raise CannotUpgrade(f"Cannot upgrade classic group {group_id} to consumer group because member "
                                f"{member.member_id}'s subscription or assignment cannot be read.")
        converted = ConsumerGroupMember(
            member.member_id, instance_id=member.group_instance_id, rack_id=subscription.rack_id,
            client_id=member.client_id, client_host=member.client_host, subscribed_topic_names=subscription.topics,
            rebalance_timeout_ms=member.rebalance_timeout_ms, member_epoch=classic.generation_id,
            previous_member_epoch=classic.generation_id, state=MemberState.STABLE, assigned_partitions=assigned,
            classic=ClassicMemberInfo(member.session_timeout_ms, protocols))
        group.put_member(converted)
        group.target[member.member_id] = assigned
        records.extend((member_metadata_record(group_id, converted),
                        target_assignment_record(group_id, member.member_id, assigned),
                        current_assignment_record(group_id, converted)))
    records.extend((group_epoch_record(group_id, group.group_epoch),
                    target_epoch_record(group_id, group.assignment_epoch)))
    return group


def only_classic_members_left(group: ConsumerGroup) -> bool:
    return bool(group.members) and all(member.classic is not None for member in group.members.values())


def to_classic_group(group: ConsumerGroup, names: Mapping[uuid.UUID, str], now_ms: int, records: list[Record]) -> Group:
    """The classic group a consumer group of classic members becomes (Stable, about to rebalance)."""
    classic = Group(group.group_id, GroupState.STABLE, now_ms)
    classic.generation_id = group.group_epoch
    assignment = {}
    for member in group.members.values():
        assert member.classic is not None
        assignment[member.member_id] = write_assignment(member.assigned_partitions, names)
        classic.add(MemberMetadata(
            member.member_id, member.instance_id, member.client_id, member.client_host,
            member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else member.classic.session_timeout_ms,
            member.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, member.classic.protocols,
            assignment[member.member_id]), None)
        records.extend(member_tombstones(group.group_id, member.member_id))
    records.extend(group_tombstones(group.group_id))
    classic.protocol_name = classic.select_protocol()
    classic.subscribed_topics = classic.compute_subscribed_topics()
    records.append(group_metadata_record(classic, assignment))
    return classic


def upgrade(manager: GroupMetadataManager, group_id: str, topics: Mapping[str, TopicInfo], now_ms: int,
            records: list[Record], out: list[Effect]) -> ConsumerGroup | None:
    """Give up the classic group `group_id` for a consumer group: None when there is none or it is
    Empty (its metadata tombstoned, its offsets kept), else the consumer group it becomes. Parked
    JoinGroup and SyncGroup requests of its members get REBALANCE_IN_PROGRESS: they rejoin the
    consumer group. Raises CannotUpgrade when it cannot become one."""
    group = manager.groups.get(group_id)
    if group is None:
        return None
    if group.state is GroupState.EMPTY:
        if group.generation_id > 0:
            records.append(group_tombstone(group_id))
        group.generation_id = 0
        group.protocol_type = group.protocol_name = group.leader_id = None
        group.subscribed_topics = None
        return None
    converted = to_consumer_group(group, topics, manager.config.group_consumer_max_size, records)
    for member in group.members.values():
        if (join := group.take_join_token(member)) is not None:
            out.append(Respond(join, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id)))
        if (sync := group.take_sync_token(member)) is not None:
            out.append(Respond(sync, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)))
    manager.remove_group(group)
    holder = manager.create_group(group_id, now_ms)  # the offsets stay, shared with commits in flight
    holder.offsets, holder.pending_offset_commits = group.offsets, group.pending_offset_commits
    return converted


def downgrade(manager: GroupMetadataManager, rebalancer: Rebalancer, group: ConsumerGroup,
              topics: Mapping[str, TopicInfo], now_ms: int, records: list[Record], out: list[Effect]) -> None:
    """The classic members of `group` (its last consumer-protocol member gone) carry on in a
    classic group, which rebalances at once; its offsets are the consumer group's."""
    names = {**{info.topic_id: name for name, info in topics.items()}, **group.topic_names_by_id()}
    classic = to_classic_group(group, names, now_ms, records)
    holder = manager.groups.get(group.group_id)
    if holder is not None:
        classic.offsets, classic.pending_offset_commits = holder.offsets, holder.pending_offset_commits
    manager.groups[group.group_id] = classic
    for member in classic.members.values():
        rebalancer.schedule_heartbeat(classic, member, now_ms)
    rebalancer.prepare_rebalance(classic, now_ms, out, "the last consumer-protocol member left")
