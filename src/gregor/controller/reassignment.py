"""Partition reassignment (KIP-455), as Kafka's KRaft controller runs it.

A reassignment names a partition's target replicas. The controller records, in one
PartitionChangeRecord, replicas = target followed by the current replicas the target drops,
`adding_replicas` = target replicas that are new and `removing_replicas` = current ones that go.
Brokers of the adding replicas create the partition and fetch from the leader like any follower;
the leader proposes them for the ISR once they caught up (AlterPartition). The change that puts
every target replica in the ISR completes the reassignment (`partition_change`): replicas become
the target, removed replicas leave the ISR, the lists are cleared, the leader moves to a target
replica if it was being removed, and the leader epoch is bumped so the removed replicas stop.
A reassignment that only reorders or drops in-sync replicas completes at once.

Cancelling (target None) reverts: replicas lose the ones being added (the removed ones stay), and
so does the ISR; if only adding replicas were in sync, the first original replica becomes the ISR
and leader, which is an unclean election and refused unless the topic allows one. A new target
for a partition already being reassigned starts from its current replica list (the running
target plus the replicas it removes), as Kafka does.

Pure functions of the metadata image; the caller commits the records (all or none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from gregor.controller.partition_change import PartitionChange
from gregor.controller.replication_control import UncleanPolicy, acceptable_leaders
from gregor.metadata.delta import merge_partition_change
from gregor.metadata.image import MetadataImage, PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import Message


@dataclass(frozen=True)
class ReassignmentResult:
    topic: str
    partition: int
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class OngoingReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def is_reassigning(registration: PartitionRegistration) -> bool:
    return bool(registration.adding_replicas or registration.removing_replicas)


def reassignment_replicas(current: Sequence[int], target: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """(replicas, removing, adding) while moving from `current` to `target` (Kafka's
    PartitionReassignmentReplicas: the lists of removed and added brokers are sorted)."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return tuple(target) + removing, removing, adding


def revert(registration: PartitionRegistration) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """(replicas, ISR, unclean) of a cancelled reassignment (Kafka's PartitionReassignmentRevert)."""
    adding = set(registration.adding_replicas)
    replicas = tuple(replica for replica in registration.replicas if replica not in adding)
    isr = tuple(replica for replica in registration.isr if replica not in adding)
    if isr or not replicas:
        return replicas, isr, False
    return replicas, replicas[:1], True


def _check_target(image: MetadataImage, target: Sequence[int]) -> str | None:
    """Kafka's validateManualPartitionAssignment (no replication factor to match)."""
    if not target:
        return "The manual partition assignment includes an empty replica list."
    for broker_id in sorted(target):
        if broker_id not in image.brokers:
            return f"The manual partition assignment includes broker {broker_id}, but no such broker is registered."
    if len(set(target)) != len(target):
        duplicate = next(b for b in target if list(target).count(b) > 1)
        return f"The manual partition assignment includes the broker {duplicate} more than once."
    return None


def alter_reassignments(image: MetadataImage, targets: Iterable[tuple[str, int, Sequence[int] | None]],
                        unclean_allowed: UncleanPolicy) -> tuple[list[ReassignmentResult], list[Message]]:
    """AlterPartitionReassignments: per (topic, partition, target replicas or None to cancel) a
    result and the records that start, complete or cancel the reassignments. A partition named
    twice gets its second target applied on top of the first."""
    acceptable = acceptable_leaders(image)
    changed: dict[tuple[str, int], PartitionRegistration] = {}
    results: list[ReassignmentResult] = []
    records: list[Message] = []
    for name, index, target in targets:
        topic = image.topics.get(name)
        registration = None
        if topic is not None:
            registration = changed.get((name, index)) or topic.partitions.get(index)
        if topic is None or registration is None:
            results.append(ReassignmentResult(name, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                              f"Unable to find partition {name}:{index}."))
            continue
        change = PartitionChange(registration, topic.topic_id, index, acceptable,
                                 unclean_allowed=target is None and unclean_allowed(name))
        if target is None:
            if not is_reassigning(registration):
                results.append(ReassignmentResult(name, index, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                                  "No partition reassignment is in progress."))
                continue
            replicas, isr, unclean = revert(registration)
            if unclean and not unclean_allowed(name):
                results.append(ReassignmentResult(
                    name, index, ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unable to revert partition assignment "
                    f"for {name}:{index} because it would require an unclean leader election."))
                continue
            change.set_isr(isr).set_assignment(replicas)
        else:
            problem = _check_target(image, target)
            if problem is not None:
                results.append(ReassignmentResult(name, index, ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem))
                continue
            change.set_assignment(*reassignment_replicas(registration.replicas, target))
        record = change.build()
        if record is not None:
            records.append(record)
            changed[(name, index)] = merge_partition_change(registration, record)
        results.append(ReassignmentResult(name, index))
    return results, records


def list_reassignments(image: MetadataImage,
                       topics: Mapping[str, Sequence[int]] | None) -> list[OngoingReassignment]:
    """ListPartitionReassignments: the running reassignments of the named partitions (unknown
    ones are left out), or of every partition when `topics` is None."""
    if topics is None:
        topics = {name: sorted(topic.partitions) for name, topic in sorted(image.topics.items())}
    ongoing = []
    for name, indexes in topics.items():
        topic = image.topics.get(name)
        for index in indexes:
            registration = topic.partitions.get(index) if topic is not None else None
            if registration is not None and is_reassigning(registration):
                ongoing.append(OngoingReassignment(name, index, registration.replicas,
                                                   registration.adding_replicas, registration.removing_replicas))
    return ongoing
