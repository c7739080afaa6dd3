"""Which partitions a member gives up, loses and gains around a rebalance, and which rebalance
listener callbacks Java's ConsumerCoordinator invokes for them.

Three moments matter: before joining (Java's onJoinPrepare), on receiving the assignment
(onJoinComplete) and before leaving (onLeavePrepare). In each result a callback field is None
when Java does not invoke that callback, and a (possibly empty) tuple in Java's topic-partition
order when it does: Java calls onPartitionsRevoked under the eager protocol and
onPartitionsAssigned after every assignment even with nothing to report. Callbacks run in field
order: revoked or lost first, then assigned.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from gregor.client.assignors.assignor import RebalanceProtocol
from gregor.client.assignors.topic_partition import TopicPartition, java_partition_key


@dataclass(frozen=True)
class RebalanceChanges:
    """The listener calls to make, what the member owns afterwards, and whether it must rejoin."""

    owned: frozenset[TopicPartition]
    revoked: tuple[TopicPartition, ...] | None = None
    lost: tuple[TopicPartition, ...] | None = None
    assigned: tuple[TopicPartition, ...] | None = None
    rejoin: bool = False


def changes_before_join(protocol: RebalanceProtocol, owned: Collection[TopicPartition],
                        subscribed_topics: Collection[str], *, generation_reset: bool) -> RebalanceChanges:
    """Before (re)joining: lost if the member fell out of the group, else revoked per protocol.

    `generation_reset` is true when the member's generation or member id was reset (fenced,
    session timed out): what it owned may already belong to someone else, so it is lost, not
    revoked. Otherwise an eager member revokes everything and a cooperative one only the
    partitions of topics it no longer subscribes to.
    """
    if generation_reset:
        return RebalanceChanges(frozenset(), lost=_ordered(owned) if owned else None)
    if protocol is RebalanceProtocol.EAGER:
        return RebalanceChanges(frozenset(), revoked=_ordered(owned))
    unsubscribed = [partition for partition in owned if partition.topic not in subscribed_topics]
    return RebalanceChanges(frozenset(owned).difference(unsubscribed),
                            revoked=_ordered(unsubscribed) if unsubscribed else None)


def changes_on_assignment(protocol: RebalanceProtocol, owned: Collection[TopicPartition],
                          assigned: Collection[TopicPartition]) -> RebalanceChanges:
    """On receiving an assignment: revoke what it dropped (cooperative) and report what it added.

    Under the eager protocol `owned` is empty by now (everything was revoked before joining).
    Under the cooperative protocol a member that revokes anything must rejoin, so the revoked
    partitions can be given to their new owners in the follow-up rebalance.
    """
    added = _ordered(set(assigned).difference(owned))
    if protocol is RebalanceProtocol.COOPERATIVE:
        revoked = set(owned).difference(assigned)
        if revoked:
            return RebalanceChanges(frozenset(assigned), revoked=_ordered(revoked), assigned=added, rejoin=True)
    return RebalanceChanges(frozenset(assigned), assigned=added)


def changes_before_leave(owned: Collection[TopicPartition], *, generation_reset: bool,
                         rebalance_in_progress: bool) -> RebalanceChanges:
    """Before leaving the group: everything goes, as lost if membership is in doubt, else revoked."""
    if not owned:
        return RebalanceChanges(frozenset())
    if generation_reset or rebalance_in_progress:
        return RebalanceChanges(frozenset(), lost=_ordered(owned))
    return RebalanceChanges(frozenset(), revoked=_ordered(owned))


def partitions_changing_owner(owned_by_member: Mapping[str, Collection[TopicPartition]],
                              assignment: Mapping[str, Collection[TopicPartition]]) -> dict[TopicPartition, str]:
    """Partitions that `assignment` gives a member while another member still owns them, and to whom.

    The cooperative protocol forbids such direct moves; Java's leader rejects an assignment from
    a custom cooperative assignor when this is not empty (validateCooperativeAssignment).
    """
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member, partitions in assignment.items():
        owned = set(owned_by_member.get(member, ()))
        added.update((partition, member) for partition in partitions if partition not in owned)
        revoked.update(owned.difference(partitions))
    return {partition: member for partition, member in added.items() if partition in revoked}


def _ordered(partitions: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    return tuple(sorted(partitions, key=java_partition_key))
