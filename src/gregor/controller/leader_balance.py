"""Automatic leader rebalancing (`auto.leader.rebalance.enable`): leadership back to preferred replicas.

A partition's preferred replica is the first of its replicas; placement spreads those evenly, so
a cluster whose partitions are led by their preferred replicas spreads the leaders' load evenly
too. After a broker fails and comes back, the partitions it led stay with their new leaders
until something moves them back. Every `leader.imbalance.check.interval.seconds` the active
controller computes, per broker, the share of the partitions it is the preferred replica of
that another broker leads; where that share exceeds `leader.imbalance.per.broker.percentage`,
those partitions get a preferred-leader election (it moves only where the preferred replica is
live and in the ISR).

That is what Kafka's ZooKeeper-era controller did. Kafka's KRaft controller ignores the
percentage and elects the preferred leader of every imbalanced partition; the percentage 0 gives
that behaviour here. Partitions being reassigned are left alone until the reassignment completes.
At most `MAX_ELECTIONS` partitions move per check, as KRaft's `maxElectionsPerImbalance` caps it.
"""

from __future__ import annotations

from typing import Iterator

from gregor.controller.partition_change import Election, PartitionChange
from gregor.controller.reassignment import is_reassigning
from gregor.controller.replication_control import acceptable_leaders, preferred_replica
from gregor.metadata.image import NO_LEADER, MetadataImage, PartitionRegistration
from gregor.protocol.messages import Message

MAX_ELECTIONS = 1000


def _preferred_partitions(image: MetadataImage) -> Iterator[tuple[int, str, int, PartitionRegistration]]:
    for name, topic in image.topics.items():
        for index, registration in topic.partitions.items():
            preferred = preferred_replica(registration)
            if preferred != NO_LEADER and not is_reassigning(registration):
                yield preferred, name, index, registration


def leader_imbalance(image: MetadataImage) -> dict[int, float]:
    """Per broker, the share of the partitions it is the preferred replica of that it does not
    lead (0.0 to 1.0); brokers that are nobody's preferred replica are left out."""
    preferred: dict[int, int] = {}
    elsewhere: dict[int, int] = {}
    for broker_id, _, _, registration in _preferred_partitions(image):
        preferred[broker_id] = preferred.get(broker_id, 0) + 1
        if registration.leader != broker_id:
            elsewhere[broker_id] = elsewhere.get(broker_id, 0) + 1
    return {broker_id: elsewhere.get(broker_id, 0) / count for broker_id, count in preferred.items()}


def rebalance_leaders(image: MetadataImage, imbalance_percentage: int) -> list[Message]:
    """The preferred-leader elections of the brokers whose imbalance exceeds the percentage."""
    imbalanced = {broker_id for broker_id, share in leader_imbalance(image).items()
                  if share * 100 > imbalance_percentage}
    acceptable = acceptable_leaders(image)
    records: list[Message] = []
    for broker_id, name, index, registration in _preferred_partitions(image):
        if broker_id not in imbalanced or registration.leader == broker_id:
            continue
        record = PartitionChange(registration, image.topics[name].topic_id, index, acceptable) \
            .set_election(Election.PREFERRED).build()
        if record is not None and record.leader == broker_id:
            records.append(record)
            if len(records) >= MAX_ELECTIONS:
                break
    return records
