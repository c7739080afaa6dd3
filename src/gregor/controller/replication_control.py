"""The controller's decisions about replicas and leaders (Kafka's ReplicationControlManager).

Pure functions of the current metadata image that return the records to commit: fencing a
broker (it leaves every ISR it was in, unless it is the last member, and its leaderships move),
unfencing one (leaderless partitions it can lead get a leader again), a leader's AlterPartition
proposal (checked against the partition's current epochs and the live brokers before it is
accepted), and preferred-leader election. Nothing here reads a clock or touches the network.

The seeds' replica and partition state machines map onto the image as follows: a replica is
NewReplica until its broker first registers, OnlineReplica while its broker is unfenced,
OfflineReplica while it is fenced; a partition is NewPartition between its PartitionRecord and
its first leader, OnlinePartition with a leader, OfflinePartition with none (leader -1).
"""

from __future__ import annotations

import enum
import uuid
from typing import Callable, Iterable, Sequence

from gregor.controller.partition_change import NO_LEADER, Election, PartitionChange
from gregor.metadata.image import MetadataImage, PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.metadata_records.fence_broker_record import FenceBrokerRecord
from gregor.protocol.messages.metadata_records.partition_change_record import PartitionChangeRecord
from gregor.protocol.messages.metadata_records.unfence_broker_record import UnfenceBrokerRecord

UncleanPolicy = Callable[[str], bool]


class PartitionState(enum.Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"


def partition_state(registration: PartitionRegistration | None) -> PartitionState:
    if registration is None:
        return PartitionState.NON_EXISTENT
    if registration.has_leader:
        return PartitionState.ONLINE
    return PartitionState.NEW if registration.leader_epoch == 0 and registration.partition_epoch == 0 \
        else PartitionState.OFFLINE


def replica_state(image: MetadataImage, broker_id: int) -> ReplicaState:
    broker = image.brokers.get(broker_id)
    if broker is None:
        return ReplicaState.NEW
    return ReplicaState.OFFLINE if broker.fenced else ReplicaState.ONLINE


def _acceptable_leaders(image: MetadataImage, excluded: int | None = None) -> Callable[[int], bool]:
    def acceptable(broker_id: int) -> bool:
        broker = image.brokers.get(broker_id)
        return broker_id != excluded and broker is not None and not broker.fenced \
            and not broker.in_controlled_shutdown
    return acceptable


def _partitions_of(image: MetadataImage, broker_id: int) -> Iterable[tuple[str, uuid.UUID, int, PartitionRegistration]]:
    for name, topic in image.topics.items():
        for index, registration in topic.partitions.items():
            if broker_id in registration.replicas:
                yield name, topic.topic_id, index, registration


def fence_broker(image: MetadataImage, broker_id: int, unclean_allowed: UncleanPolicy) -> list:
    """The broker missed its session (or shut down): fence it, take it out of every ISR (the
    last member stays, so a clean election can find it later) and move its leaderships."""
    broker = image.brokers.get(broker_id)
    if broker is None or broker.fenced:
        return []
    records: list = [FenceBrokerRecord(id=broker_id, epoch=broker.epoch)]
    acceptable = _acceptable_leaders(image, excluded=broker_id)
    for name, topic_id, index, registration in _partitions_of(image, broker_id):
        change = PartitionChange(registration, topic_id, index, acceptable, unclean_allowed(name))
        change.set_isr([replica for replica in registration.isr if replica != broker_id])
        record = change.build()
        if record is not None:
            records.append(record)
    return records


def unfence_broker(image: MetadataImage, broker_id: int, unclean_allowed: UncleanPolicy) -> list:
    """The broker is back and caught up: unfence it and give leaderless partitions it can lead a
    leader. It rejoins ISRs only when their leaders propose it (AlterPartition)."""
    broker = image.brokers.get(broker_id)
    if broker is None or not broker.fenced:
        return []
    records: list = [UnfenceBrokerRecord(id=broker_id, epoch=broker.epoch)]

    def acceptable(candidate: int) -> bool:
        return candidate == broker_id or _acceptable_leaders(image)(candidate)

    for name, topic_id, index, registration in _partitions_of(image, broker_id):
        if registration.leader == NO_LEADER:
            record = PartitionChange(registration, topic_id, index, acceptable, unclean_allowed(name)).build()
            if record is not None:
                records.append(record)
    return records


def alter_partition(image: MetadataImage, leader_id: int, topic_id: uuid.UUID, partition: int, leader_epoch: int,
                    partition_epoch: int, new_isr: Sequence[int]) -> tuple[ErrorCode, PartitionChangeRecord | None]:
    """A leader's ISR proposal, checked as Kafka checks it; the record is None when the
    proposal is refused or changes nothing."""
    topic = image.topics_by_id.get(topic_id)
    registration = topic.partitions.get(partition) if topic is not None else None
    if registration is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if leader_id != registration.leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
    if leader_epoch != registration.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH, None
    if partition_epoch != registration.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION, None
    acceptable = _acceptable_leaders(image)
    if leader_id not in new_isr or len(set(new_isr)) != len(new_isr) or any(
            replica not in registration.replicas or not acceptable(replica) for replica in new_isr):
        return ErrorCode.INELIGIBLE_REPLICA, None
    ordered = [replica for replica in registration.replicas if replica in new_isr]
    record = PartitionChange(registration, topic_id, partition, acceptable).set_isr(ordered).build()
    return ErrorCode.NONE, record


def elect_preferred_leaders(image: MetadataImage,
                            partitions: Iterable[tuple[str, int]]) -> tuple[dict[tuple[str, int], ErrorCode], list]:
    """ElectLeaders (PREFERRED) for the named partitions: per partition NONE (moved),
    ELECTION_NOT_NEEDED (already led by its preferred replica), PREFERRED_LEADER_NOT_AVAILABLE
    (that replica is fenced or out of the ISR) or UNKNOWN_TOPIC_OR_PARTITION."""
    results: dict[tuple[str, int], ErrorCode] = {}
    records: list = []
    acceptable = _acceptable_leaders(image)
    for name, index in partitions:
        topic = image.topics.get(name)
        registration = topic.partitions.get(index) if topic is not None else None
        if registration is None:
            results[(name, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        preferred = registration.replicas[0] if registration.replicas else NO_LEADER
        if registration.leader == preferred:
            results[(name, index)] = ErrorCode.ELECTION_NOT_NEEDED
            continue
        if preferred not in registration.isr or not acceptable(preferred):
            results[(name, index)] = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            continue
        record = PartitionChange(registration, topic.topic_id, index, acceptable) \
            .set_election(Election.PREFERRED).build()
        results[(name, index)] = ErrorCode.NONE
        if record is not None:
            records.append(record)
    return results, records
