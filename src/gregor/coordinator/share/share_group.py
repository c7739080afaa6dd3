"""Share groups' membership (KIP-932), sans-IO: heartbeats, epochs, session expiry, assignment.

Kafka's GroupMetadataManager for share groups, without rebalances: a member joins with epoch 0
and a member id of its choosing (one is made for an empty id), leaves with epoch -1, and
otherwise heartbeats with the epoch it was last given (or the one before, in case an answer was
lost; any other is FENCED_MEMBER_EPOCH). Any change of the members, their subscriptions or the
partition counts of subscribed topics bumps the group epoch and recomputes the target assignment
(`simple_assignor`); each member moves to it, and its epoch to the group's, with its next
heartbeat, whose answer carries the assignment. There is nothing to revoke: a partition may be
shared, so a new assignment applies at once. A member not heard from for
`group.share.session.timeout.ms` is removed (`expire`, due at `next_deadline()`).
The edge persists the groups as Kafka's share group records (`share_group_records`,
`broker.share_group_log`), so a new coordinator carries on with them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable, Mapping

from gregor.coordinator.share import simple_assignor
from gregor.metadata.group_configs import group_int
from gregor.protocol.error_codes import ErrorCode

LEAVE_EPOCH = -1


@dataclass(frozen=True)
class ShareGroupConfig:
    """`group.share.session.timeout.ms`, `group.share.heartbeat.interval.ms`,
    `group.share.max.size` (Kafka's defaults)."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 200


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: frozenset[str]
    session_deadline_ms: int
    assignment: dict[str, list[int]] = field(default_factory=dict)  # as the member was last told
    previous_epoch: int = -1


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    partition_counts: dict[str, int] = field(default_factory=dict)
    target: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # by member id, at assignment_epoch
    state_topics: set[str] = field(default_factory=set)  # topics whose partitions may have share state
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # of the subscribed topics, as last assigned

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict[str, list[int]] | None = None  # None: unchanged since the member last heard
    message: str | None = None


class ShareGroupCoordinator:
    def __init__(self, config: ShareGroupConfig) -> None:
        self.config = config
        self.groups: dict[str, ShareGroup] = {}
        #: A group's GROUP-resource config overrides (`share.session.timeout.ms`,
        #: `share.heartbeat.interval.ms`), read at each heartbeat; none by default.
        self.group_config_overrides: Callable[[str], Mapping[str, str]] = lambda _group_id: {}

    def _interval_ms(self, group_id: str) -> int:
        return group_int(self.group_config_overrides(group_id), "share.heartbeat.interval.ms",
                         self.config.heartbeat_interval_ms)

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str, client_host: str,
                  partition_counts: Mapping[str, int], now_ms: int,
                  topic_ids: Mapping[str, uuid.UUID] | None = None) -> HeartbeatResult:
        """One ShareGroupHeartbeat; `partition_counts` are the current counts of the topics the
        member subscribes to (absent: no such topic), `topic_ids` their ids: a topic deleted and
        created again under its name is a new topic, so the assignment (by topic id) changes."""
        if not group_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, message="GroupId can't be empty.")
        group = self.groups.get(group_id)
        if member_epoch == LEAVE_EPOCH:
            if group is not None and member_id in group.members:
                del group.members[member_id]
                self._reassign(group, now_ms)
            return HeartbeatResult(ErrorCode.NONE, member_id, LEAVE_EPOCH, self._interval_ms(group_id))
        if member_epoch == 0:
            if subscribed is None or not subscribed:
                return HeartbeatResult(ErrorCode.INVALID_REQUEST,
                                       message="SubscribedTopicNames must be set in first request.")
            if group is None:
                group = self.groups.setdefault(group_id, ShareGroup(group_id))
            member_id = member_id or str(uuid.uuid4())
            member = group.members.get(member_id)
            if member is None:
                if len(group.members) >= self.config.max_size:
                    return HeartbeatResult(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                           message=f"The share group has reached its maximum size of "
                                                   f"{self.config.max_size}.")
                member = ShareMember(member_id, 0, client_id, client_host, rack_id, frozenset(), 0)
                group.members[member_id] = member
        else:
            member = group.members.get(member_id) if group is not None else None
            if member is None:
                return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID,
                                       message=f"Member {member_id} is not a member of share group {group_id}.")
            if member_epoch not in (member.member_epoch, member.previous_epoch):
                return HeartbeatResult(ErrorCode.FENCED_MEMBER_EPOCH,
                                       message=f"Member epoch {member_epoch} is not {member.member_epoch}.")
        assert group is not None
        member.session_deadline_ms = now_ms + group_int(self.group_config_overrides(group_id),
                                                        "share.session.timeout.ms", self.config.session_timeout_ms)
        if rack_id is not None:
            member.rack_id = rack_id
        changed = member_epoch == 0
        if subscribed is not None and frozenset(subscribed) != member.subscribed:
            member.subscribed = frozenset(subscribed)
            changed = True
        counts = {topic: partition_counts.get(topic, 0) for topic in self._subscribed_topics(group)}
        if counts != group.partition_counts:
            changed = True
        if topic_ids is not None:
            ids = {topic: topic_ids[topic] for topic in self._subscribed_topics(group) if topic in topic_ids}
            if ids != group.topic_ids:
                group.topic_ids = ids
                changed = True
        if changed:
            self._reassign(group, now_ms, partition_counts)
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
            member.assignment = group.target.get(member.member_id, {})
        send = member_epoch != member.member_epoch or subscribed is not None
        return HeartbeatResult(ErrorCode.NONE, member.member_id, member.member_epoch,
                               self._interval_ms(group_id),
                               {t: list(p) for t, p in member.assignment.items()} if send else None)

    def expire(self, now_ms: int) -> list[tuple[str, str]]:
        """Remove the members whose session ran out; (group id, member id) of each."""
        removed = []
        for group in self.groups.values():
            gone = [m for m in group.members.values() if m.session_deadline_ms <= now_ms]
            for member in gone:
                del group.members[member.member_id]
                removed.append((group.group_id, member.member_id))
            if gone:
                self._reassign(group, now_ms)
        return removed

    def next_deadline(self) -> int | None:
        deadlines = [m.session_deadline_ms for g in self.groups.values() for m in g.members.values()]
        return min(deadlines) if deadlines else None

    def delete(self, group_id: str) -> ErrorCode:
        """DeleteGroups for a share group: only an empty one."""
        error = self.offsets_error(group_id, create=False)
        if error:
            return error
        del self.groups[group_id]
        return ErrorCode.NONE

    def offsets_error(self, group_id: str, create: bool) -> ErrorCode:
        """Whether the group's offsets may be altered or deleted (or it may be deleted): only an
        empty group's (NON_EMPTY_GROUP), as Kafka. With `create`, an unknown group is made (empty),
        as AlterShareGroupOffsets does; else it is GROUP_ID_NOT_FOUND."""
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                return ErrorCode.GROUP_ID_NOT_FOUND
            self.groups[group_id] = ShareGroup(group_id)
            return ErrorCode.NONE
        return ErrorCode.NON_EMPTY_GROUP if group.members else ErrorCode.NONE

    @staticmethod
    def _subscribed_topics(group: ShareGroup) -> set[str]:
        return {t for m in group.members.values() for t in m.subscribed}

    def _reassign(self, group: ShareGroup, now_ms: int, partition_counts: Mapping[str, int] | None = None) -> None:
        group.group_epoch += 1
        counts = partition_counts if partition_counts is not None else group.partition_counts
        group.partition_counts = {topic: counts.get(topic, 0) for topic in self._subscribed_topics(group)}
        group.state_topics.update(group.partition_counts)
        group.target = simple_assignor.assign({m.member_id: m.subscribed for m in group.members.values()},
                                              group.partition_counts)
        group.assignment_epoch = group.group_epoch
