"""The controller's decisions about replicas and leaders (Kafka's ReplicationControlManager).

Pure functions of the current metadata image that return the records to commit: fencing a
broker (it leaves every ISR it was in, unless it is the last member, and its leaderships move),
unfencing one (leaderless partitions it can lead get a leader again), a leader's AlterPartition
proposal (checked against the partition's current epochs and the live brokers before it is
accepted, and completing a partition reassignment once its new replicas are in sync), and
ElectLeaders (preferred or unclean). Nothing here reads a clock or touches the network.

The seeds' replica and partition state machines map onto the image as follows: a replica is
NewReplica until its broker first registers, OnlineReplica while its broker is unfenced,
OfflineReplica while it is fenced; a partition is NewPartition between its PartitionRecord and
its first leader, OnlinePartition with a leader, OfflinePartition with none (leader -1).
"""

from __future__ import annotations

import enum
import uuid
from typing import Callable, Iterable, Mapping, Sequence

from gregor.controller.partition_change import NO_LEADER, NO_LEADER_CHANGE, Election, PartitionChange
from gregor.metadata.image import MetadataImage, PartitionRegistration
from gregor.metadata.topic_configs import effective_topic_config
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import Message
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


def acceptable_leaders(image: MetadataImage, excluded: int | None = None) -> Callable[[int], bool]:
    """Brokers that may lead: registered, unfenced and not in controlled shutdown."""
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


def fence_broker(image: MetadataImage, broker_id: int, unclean_allowed: UncleanPolicy) -> list[Message]:
    """The broker missed its session (or shut down): fence it, take it out of every ISR (the
    last member stays, so a clean election can find it later) and move its leaderships."""
    broker = image.brokers.get(broker_id)
    if broker is None or broker.fenced:
        return []
    records: list[Message] = [FenceBrokerRecord(id=broker_id, epoch=broker.epoch)]
    acceptable = acceptable_leaders(image, excluded=broker_id)
    for name, topic_id, index, registration in _partitions_of(image, broker_id):
        change = PartitionChange(registration, topic_id, index, acceptable, unclean_allowed(name))
        change.set_isr([replica for replica in registration.isr if replica != broker_id])
        record = change.build()
        if record is not None:
            records.append(record)
    return records


def unfence_broker(image: MetadataImage, broker_id: int, unclean_allowed: UncleanPolicy) -> list[Message]:
    """The broker is back and caught up: unfence it and give leaderless partitions it can lead a
    leader. It rejoins ISRs only when their leaders propose it (AlterPartition)."""
    broker = image.brokers.get(broker_id)
    if broker is None or not broker.fenced:
        return []
    records: list[Message] = [UnfenceBrokerRecord(id=broker_id, epoch=broker.epoch)]

    def acceptable(candidate: int) -> bool:
        return candidate == broker_id or acceptable_leaders(image)(candidate)

    for name, topic_id, index, registration in _partitions_of(image, broker_id):
        if registration.leader == NO_LEADER:
            record = PartitionChange(registration, topic_id, index, acceptable, unclean_allowed(name)).build()
            if record is not None:
                records.append(record)
    return records


def alter_partition(image: MetadataImage, leader_id: int, topic_id: uuid.UUID, partition: int, leader_epoch: int,
                    partition_epoch: int, new_isr: Sequence[int]) -> tuple[ErrorCode, PartitionChangeRecord | None]:
    """A leader's ISR proposal, checked as Kafka checks it; the record is None when the
    proposal is refused or changes nothing. An ISR that holds every target replica of a running
    reassignment completes it (see `partition_change`); when that moves the leadership the answer
    is NEW_LEADER_ELECTED along with the record."""
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
    acceptable = acceptable_leaders(image)
    if leader_id not in new_isr or len(set(new_isr)) != len(new_isr) or any(
            replica not in registration.replicas or not acceptable(replica) for replica in new_isr):
        return ErrorCode.INELIGIBLE_REPLICA, None
    ordered = [replica for replica in registration.replicas if replica in new_isr]
    record = PartitionChange(registration, topic_id, partition, acceptable).set_isr(ordered).build()
    if record is not None and record.leader not in (NO_LEADER_CHANGE, leader_id):
        # The new ISR completed a reassignment that moved the leadership away: the change is
        # committed and the proposer told to learn the new leader from the metadata (Kafka's way).
        return ErrorCode.NEW_LEADER_ELECTED, record
    return ErrorCode.NONE, record


class ElectionType(enum.IntEnum):
    """ElectLeaders' election types (KIP-460)."""
    PREFERRED = 0
    UNCLEAN = 1


def elect_leaders(image: MetadataImage, election_type: ElectionType,
                  topics: Iterable[tuple[str, Iterable[int]]] | None) -> tuple[list[tuple[str, list[tuple[int, ErrorCode]]]], list[Message]]:
    """ElectLeaders, as Kafka's controller answers it: per topic of the request, (partition,
    error) for each of its partitions, and the records. The error is NONE (a leader was elected),
    ELECTION_NOT_NEEDED (PREFERRED: already led by its preferred replica; UNCLEAN: it has a
    leader), PREFERRED_LEADER_NOT_AVAILABLE (the preferred replica is fenced or out of the ISR, so
    the leader stays), ELIGIBLE_LEADERS_NOT_AVAILABLE (UNCLEAN: no live replica at all) or
    UNKNOWN_TOPIC_OR_PARTITION. An UNCLEAN election prefers an ISR member and takes a live replica
    outside the ISR only when there is none, whatever unclean.leader.election.enable says.

    `topics` None means every partition of every topic; then partitions that need no election
    are left out of the answer. A partition named twice is elected once."""
    every = topics is None
    if topics is None:
        topics = [(name, sorted(topic.partitions)) for name, topic in image.topics.items()]
    acceptable = acceptable_leaders(image)
    answered: dict[tuple[str, int], ErrorCode] = {}
    results: list[tuple[str, list[tuple[int, ErrorCode]]]] = []
    records: list[Message] = []
    for name, indexes in topics:
        answers: list[tuple[int, ErrorCode]] = []
        topic = image.topics.get(name)
        for index in indexes:
            error = answered.get((name, index))
            if error is None:
                registration = topic.partitions.get(index) if topic is not None else None
                error, record = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
                if topic is not None and registration is not None:
                    error, record = _elect(registration, topic.topic_id, index, election_type, acceptable)
                answered[(name, index)] = error
                if record is not None:
                    records.append(record)
            if not (every and error == ErrorCode.ELECTION_NOT_NEEDED):
                answers.append((index, error))
        results.append((name, answers))
    return results, records


def _elect(registration: PartitionRegistration, topic_id: uuid.UUID, index: int, election_type: ElectionType,
           acceptable: Callable[[int], bool]) -> tuple[ErrorCode, PartitionChangeRecord | None]:
    preferred = election_type is ElectionType.PREFERRED
    if preferred:
        not_needed = registration.leader == preferred_replica(registration)
    else:
        not_needed = registration.has_leader
    if not_needed:
        return ErrorCode.ELECTION_NOT_NEEDED, None
    change = PartitionChange(registration, topic_id, index, acceptable, unclean_allowed=not preferred)
    record = change.set_election(Election.PREFERRED if preferred else Election.ONLINE).build()
    if record is None:
        return (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if preferred
                else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE), None
    return ErrorCode.NONE, record


def preferred_replica(registration: PartitionRegistration) -> int:
    """The first assigned replica, the leader a balanced cluster has (-1 without replicas)."""
    return registration.replicas[0] if registration.replicas else NO_LEADER


def elect_preferred_leaders(image: MetadataImage,
                            partitions: Iterable[tuple[str, int]]) -> tuple[dict[tuple[str, int], ErrorCode], list[Message]]:
    """ElectLeaders (PREFERRED) for the named partitions, answered per partition."""
    topics: dict[str, list[int]] = {}
    for name, index in partitions:
        topics.setdefault(name, []).append(index)
    results, records = elect_leaders(image, ElectionType.PREFERRED, topics.items())
    return {(name, index): error for name, answers in results for index, error in answers}, records


def unclean_policy(image: MetadataImage, static_config: Mapping[str, str]) -> UncleanPolicy:
    """`unclean.leader.election.enable` in force for a topic: its override, else the cluster's
    dynamic default, else the node's static config (Kafka's precedence)."""
    def allowed(topic: str) -> bool:
        values = effective_topic_config(image.topic_config(topic), static_config,
                                        dynamic_default_config=image.broker_config(""))
        return values["unclean.leader.election.enable"].lower() == "true"
    return allowed
