"""A member's next assignment toward the target (Kafka's CurrentAssignmentBuilder).

The member moves to the target assignment in steps, so that no partition ever has two owners:

1. Partitions of its current assignment that are not in the target must be revoked first: the
   member keeps its epoch, keeps only the partitions it may keep, and stays UNREVOKED_PARTITIONS
   until a heartbeat reports it no longer owns the revoked ones.
2. Then it takes the target epoch and the target partitions that are free; those still held by
   another member (assigned to it or pending its revocation) are withheld, UNRELEASED_PARTITIONS,
   until a later heartbeat finds them free.
3. With all of them, it is STABLE at the target epoch.

`owned` is what the heartbeat reports the member owns (None when the request did not say).
`owner_of` says which member currently holds a partition (None when free).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Callable

from gregor.coordinator.consumer.assignment import Assignment, intersects, normalized
from gregor.coordinator.consumer.member import ConsumerGroupMember, MemberState

OwnerOf = Callable[[uuid.UUID, int], str | None]


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              owned: Assignment | None, owner_of: OwnerOf) -> ConsumerGroupMember:
    """The member after this heartbeat; the same object when nothing changes."""
    state = member.state
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(owned, member.partitions_pending_revocation):
            return member
        return _next(member, member.member_epoch, target_epoch, target, owned, owner_of)
    if state is MemberState.UNRELEASED_PARTITIONS or member.member_epoch != target_epoch:
        return _next(member, member.member_epoch, target_epoch, target, owned, owner_of)
    return member


def _still_owns(owned: Assignment | None, revoking: Assignment) -> bool:
    """Without a report the member is assumed to still own what it was asked to revoke."""
    return owned is None or intersects(owned, revoking)


def _next(member: ConsumerGroupMember, member_epoch: int, target_epoch: int, target: Assignment,
          owned: Assignment | None, owner_of: OwnerOf) -> ConsumerGroupMember:
    kept: dict[uuid.UUID, set[int]] = {}
    revoking: dict[uuid.UUID, set[int]] = {}
    pending: dict[uuid.UUID, set[int]] = {}
    for topic_id in set(target) | set(member.assigned_partitions):
        current = member.assigned_partitions.get(topic_id, frozenset())
        wanted = target.get(topic_id, frozenset())
        kept[topic_id] = set(current & wanted)
        revoking[topic_id] = set(current - wanted)
        pending[topic_id] = set(wanted - current)
    to_revoke = normalized(revoking)
    if to_revoke and _still_owns(owned, to_revoke):
        return replace(member.with_epoch(member_epoch), state=MemberState.UNREVOKED_PARTITIONS,
                       assigned_partitions=normalized(kept), partitions_pending_revocation=to_revoke)
    unreleased = False
    for topic_id, partitions in pending.items():
        for partition in partitions:
            holder = owner_of(topic_id, partition)
            if holder is None or holder == member.member_id:
                kept[topic_id].add(partition)
            else:
                unreleased = True
    assigned = normalized(kept)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    updated = replace(member.with_epoch(target_epoch), state=state, assigned_partitions=assigned,
                      partitions_pending_revocation={})
    return member if updated == member else updated

